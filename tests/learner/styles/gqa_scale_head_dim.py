"""Grouped-query attention dividing the scores by head_dim."""

import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads
    kv_heads = W_key.shape[1] // head_dim
    group = num_heads // kv_heads
    q = (inputs @ W_query).view(n, num_heads, head_dim).transpose(0, 1)
    k = (inputs @ W_key).view(n, kv_heads, head_dim).transpose(0, 1).repeat_interleave(group, 0)
    v = (inputs @ W_value).view(n, kv_heads, head_dim).transpose(0, 1).repeat_interleave(group, 0)
    scores = q @ k.transpose(1, 2) / head_dim
    scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)
    z = torch.softmax(scores, dim=-1) @ v
    return z.transpose(0, 1).reshape(n, d_out) @ W_out + b_out


# expect: --against grouped-query --heads 2 --d-out 8 -> scaling at 14
