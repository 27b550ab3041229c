"""Square weights used as x @ W; the output bias is declared but never added."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, context_length):
        super().__init__()
        self.h = n_heads
        self.W_q = nn.Parameter(torch.randn(d_model, d_model))
        self.W_k = nn.Parameter(torch.randn(d_model, d_model))
        self.W_v = nn.Parameter(torch.randn(d_model, d_model))
        self.W_o = nn.Parameter(torch.randn(d_model, d_model))
        self.b_out = nn.Parameter(torch.zeros(d_model))
        self.register_buffer("tril", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        T, D = x.shape[-2], x.shape[-1]
        hd = D // self.h
        q = (x @ self.W_q).view(-1, T, self.h, hd).transpose(1, 2)
        k = (x @ self.W_k).view(-1, T, self.h, hd).transpose(1, 2)
        v = (x @ self.W_v).view(-1, T, self.h, hd).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / hd**0.5
        att = att.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        out = att.softmax(dim=-1) @ v
        out = out.transpose(1, 2).reshape(-1, T, D)
        return out @ self.W_o


# expect: --against multihead --inputs ton-voyage --heads 2 --d-out 4 -> plus-tensor at 28
