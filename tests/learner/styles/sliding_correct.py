"""Sliding-window attention with a band mask built from two aranges."""

import torch


def attention(inputs, W_query, W_key, W_value, window=3):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n = inputs.shape[0]
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    hidden = (j > i) | (i - j >= window)
    scores = (q @ k.T / k.shape[-1] ** 0.5).masked_fill(hidden, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# expect: --against sliding-window -> ok
