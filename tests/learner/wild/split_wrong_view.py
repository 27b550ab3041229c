"""Multi-head attention as a function; heads split with view(T, head_dim, heads)."""

import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    T = inputs.shape[0]
    d = W_query.shape[1]
    hd = d // num_heads
    q = (inputs @ W_query).view(T, hd, num_heads).permute(2, 0, 1)
    k = (inputs @ W_key).view(T, num_heads, hd).transpose(0, 1)
    v = (inputs @ W_value).view(T, num_heads, hd).transpose(0, 1)
    scores = q @ k.transpose(-2, -1) / hd**0.5
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    weights = scores.masked_fill(causal, float("-inf")).softmax(-1)
    heads = weights @ v
    return heads.transpose(0, 1).reshape(T, d) @ W_out + b_out


# expect: --against multihead --heads 2 --d-out 4 -> head-split at 10
