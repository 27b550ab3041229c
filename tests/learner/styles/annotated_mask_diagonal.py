"""The Annotated Transformer's attention, with a subsequent-mask helper that hides the diagonal."""

import math

import torch


def subsequent_mask(size):
    return torch.triu(torch.ones(size, size), diagonal=0) == 0


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    scores = scores.masked_fill(subsequent_mask(scores.size(-1)) == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


# expect: --against masked --d-out 4 -> mask-diagonal at 9
