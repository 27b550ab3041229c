"""Cross-attention as a function: queries from x, keys and values from the context sequence."""

import torch


def cross_attention(x, context, W_query, W_key, W_value):
    q = x @ W_query
    k = context @ W_key
    v = context @ W_value
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v


# expect: --against cross-attention -> ok
