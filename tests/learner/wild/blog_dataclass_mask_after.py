"""Dataclass output; the causal mask is added to the weights after the softmax."""

from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class AttentionOutput:
    output: torch.Tensor
    probs: torch.Tensor


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        upper = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("bias", upper.masked_fill(upper == 1, -1e9))

    def forward(self, x):
        n = x.shape[-2]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        probs = torch.softmax(logits, dim=-1)
        probs = probs + self.bias[:n, :n]
        return AttentionOutput(output=probs @ v, probs=probs)


# expect: --against masked -> masked-after at 29
