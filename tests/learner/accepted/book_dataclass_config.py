"""The book's CausalAttention, built from a dataclass config with the book's own field names."""

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class AttentionConfig:
    d_in: int
    d_out: int
    context_length: int
    dropout: float = 0.0
    qkv_bias: bool = False


class CausalAttention(nn.Module):
    def __init__(self, cfg: AttentionConfig):
        super().__init__()
        self.d_out = cfg.d_out
        self.W_query = nn.Linear(cfg.d_in, cfg.d_out, bias=cfg.qkv_bias)
        self.W_key = nn.Linear(cfg.d_in, cfg.d_out, bias=cfg.qkv_bias)
        self.W_value = nn.Linear(cfg.d_in, cfg.d_out, bias=cfg.qkv_bias)
        self.dropout = nn.Dropout(cfg.dropout)
        ones = torch.ones(cfg.context_length, cfg.context_length)
        self.register_buffer("mask", torch.triu(ones, diagonal=1))

    def forward(self, x):
        num_tokens = x.shape[1]
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return self.dropout(attn_weights) @ values
