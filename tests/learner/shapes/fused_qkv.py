"""nanoGPT-like: one fused c_attn projection split three ways, c_proj out, batched."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class FusedAttention(nn.Module):
    def __init__(self, d_in, d_out, num_heads, context_length, dropout=0.0):
        super().__init__()
        self.c_attn = nn.Linear(d_in, 3 * d_out, bias=False)
        self.c_proj = nn.Linear(d_out, d_out)
        self.n_head, self.d_out = num_heads, d_out
        self.attn_dropout = nn.Dropout(dropout)
        mask = torch.tril(torch.ones(context_length, context_length))
        self.register_buffer("bias", mask.view(1, 1, context_length, context_length))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.d_out, dim=2)
        k = k.view(B, T, self.n_head, self.d_out // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, self.d_out // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.d_out // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.c_proj(y)


# expect: --against multihead --d-out 4 -> ok
