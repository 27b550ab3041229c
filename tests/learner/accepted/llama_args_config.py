"""A Llama-style attention block built from ModelArgs (dim, n_heads, n_kv_heads, max_seq_len)
with a head_dim property of its own."""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 4096
    n_heads: int = 32
    n_kv_heads: int | None = None
    max_seq_len: int = 2048

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads or args.n_heads
        self.head_dim = args.head_dim
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=True)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.wq(x).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        repeat = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.full((n, n), float("-inf")).triu(1)
        weights = F.softmax(scores + mask, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, n, -1)
        return self.wo(out)
