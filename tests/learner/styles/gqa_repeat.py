"""Grouped-query attention that tiles the key/value heads with repeat."""

import torch
import torch.nn.functional as F


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads
    kv_heads = W_key.shape[1] // head_dim
    q = (inputs @ W_query).view(n, num_heads, head_dim).transpose(0, 1)
    k = (inputs @ W_key).view(n, kv_heads, head_dim).transpose(0, 1)
    v = (inputs @ W_value).view(n, kv_heads, head_dim).transpose(0, 1)
    k = k.repeat(num_heads // kv_heads, 1, 1)
    v = v.repeat(num_heads // kv_heads, 1, 1)
    z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return z.transpose(0, 1).reshape(n, d_out) @ W_out + b_out


# expect: --against grouped-query --heads 4 -o kv_heads=2 --d-out 8 -> heads-tiled at 14
