"""Sliding window whose band keeps one key too many."""

import torch


def attention(inputs, W_query, W_key, W_value, window=3):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n = inputs.shape[0]
    pos = torch.arange(n)
    too_far = pos[None, :] < pos[:, None] - window
    future = pos[None, :] > pos[:, None]
    scores = q @ k.T / k.shape[-1] ** 0.5
    scores = scores.masked_fill(too_far | future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# expect: --against sliding-window -> window-off-by-one at 13
