"""Sliding window built as a symmetric band |i - j| < window."""

import torch


def attention(inputs, W_query, W_key, W_value, window=3):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    n = inputs.shape[0]
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    scores = queries @ keys.T / keys.shape[-1] ** 0.5
    scores[distance.abs() >= window] = float("-inf")
    return torch.softmax(scores, dim=-1) @ values


# expect: --against sliding-window -> window-symmetric at 13
