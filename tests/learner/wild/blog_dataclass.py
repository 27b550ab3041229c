"""Blog-style self-attention module that returns its results in a small dataclass."""

from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class AttentionOutput:
    attn_weights: torch.Tensor
    context: torch.Tensor


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.register_buffer("causal", torch.ones(context_length, context_length).tril())

    def forward(self, x):
        n = x.shape[-2]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        logits = logits.masked_fill(self.causal[:n, :n] == 0, float("-inf"))
        weights = torch.softmax(logits, dim=-1)
        return AttentionOutput(attn_weights=weights, context=weights @ v)


# expect: --against masked -> ok
