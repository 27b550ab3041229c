"""Cross-attention where the scores are divided by the source length instead of sqrt(d_k)."""

import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, kdim, vdim, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.randn(d_model, d_out))
        self.W_key = nn.Parameter(torch.randn(kdim, d_out))
        self.W_value = nn.Parameter(torch.randn(vdim, d_out))

    def forward(self, x, memory):
        queries = x @ self.W_query
        keys = memory @ self.W_key
        values = memory @ self.W_value
        scores = queries @ keys.T
        scores = scores / memory.shape[0]
        return torch.softmax(scores, dim=-1) @ values


# expect: --against cross-attention -> scaling at 19
