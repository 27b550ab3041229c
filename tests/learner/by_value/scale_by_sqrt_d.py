"""Scores multiplied by √d_k where they should be divided by it."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = q @ k.T * k.shape[-1] ** 0.5
    weights = torch.softmax(scores, dim=-1)
    return weights @ v
