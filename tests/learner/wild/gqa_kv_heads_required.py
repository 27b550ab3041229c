"""Grouped-query attention as a function whose kv_heads parameter has no default."""

import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads, kv_heads):
    n = inputs.shape[0]
    hd = W_query.shape[1] // num_heads
    q = (inputs @ W_query).view(n, num_heads, hd).transpose(0, 1)
    k = (inputs @ W_key).view(n, kv_heads, hd).transpose(0, 1)
    v = (inputs @ W_value).view(n, kv_heads, hd).transpose(0, 1)
    k = k.repeat_interleave(num_heads // kv_heads, dim=0)
    v = v.repeat_interleave(num_heads // kv_heads, dim=0)
    s = q @ k.transpose(1, 2) / hd**0.5
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    w = torch.softmax(s, dim=-1)
    return (w @ v).transpose(0, 1).reshape(n, -1) @ W_out + b_out


# expect: --against grouped-query --heads 4 -o kv_heads=2 --d-out 4 -> ok
