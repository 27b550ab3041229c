"""A band of width `window` around each query: it forgets the causal half."""

import torch


def attention(inputs, W_query, W_key, W_value, window=3):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n = inputs.shape[0]
    mask = torch.ones(n, n, dtype=torch.bool).triu(-window + 1)
    scores = (q @ k.T) / k.shape[-1] ** 0.5
    scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ v


# expect: --against sliding-window -> window-not-causal at 11
