"""nn.Linear projections (stored d_out x d_in), no batch dimension."""

import torch
from torch import nn


class SelfAttentionLinear(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)
        return weights @ v


# expect: --against trainable --init randn --d-out 4 -> ok
