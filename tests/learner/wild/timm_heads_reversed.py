"""timm-style fused qkv; the heads' outputs are concatenated last head first."""

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) / self.head_dim**0.5
        mask = torch.ones(N, N, dtype=torch.bool).triu(1)
        attn = attn.masked_fill(mask, float("-inf")).softmax(dim=-1)
        heads = [attn[:, h] @ v[:, h] for h in range(self.num_heads)]
        x = torch.cat(heads[::-1], dim=-1)
        return self.proj(x)


# expect: --against multihead --inputs ton-voyage --heads 2 --d-out 4 -> reversed at 23
