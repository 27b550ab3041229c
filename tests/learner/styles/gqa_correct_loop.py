"""Grouped-query attention with an explicit loop over query heads."""

import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    hd = d_out // num_heads
    kv_heads = W_key.shape[1] // hd
    group = num_heads // kv_heads
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    heads = []
    for h in range(num_heads):
        g = h // group
        q = Q[:, h * hd : (h + 1) * hd]
        k = K[:, g * hd : (g + 1) * hd]
        v = V[:, g * hd : (g + 1) * hd]
        s = (q @ k.T / hd**0.5).masked_fill(causal, -torch.inf)
        heads.append(torch.softmax(s, dim=-1) @ v)
    return torch.cat(heads, dim=1) @ W_out + b_out


# expect: --against grouped-query --heads 4 -o kv_heads=2 --d-out 8 -> ok
