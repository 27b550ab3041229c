from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.n_heads * self.head_dim, args.dim, bias=True)

    def forward(self, x):
        batch, n, _ = x.shape
        q = self.wq(x).view(batch, n, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(batch, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(batch, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        group = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-2, -1) / self.head_dim**0.5
        hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
        weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, n, -1)
        return self.wo(out)
