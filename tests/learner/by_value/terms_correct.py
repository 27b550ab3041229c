"""The distance-bias variant written right."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n = inputs.shape[0]
    pos = torch.arange(n, dtype=inputs.dtype)
    scores = q @ k.T / k.shape[-1] ** 0.5 - 0.5 * (pos[:, None] - pos[None, :]).abs()
    return torch.softmax(scores, dim=-1) @ v
