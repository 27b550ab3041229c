"""Rotary embeddings that write only the first of each pair: the second halves of the pairs
are left as ``torch.empty_like`` made them (no values at all)."""

import torch


def turn(x, angle):
    a, b = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = a * angle.cos() - b * angle.sin()
    return out


def attention(inputs, W_query, W_key, W_value, base=10000.0):
    n, d = inputs.shape[0], W_query.shape[1]
    theta = base ** (-torch.arange(0, d, 2) / d)
    angle = torch.arange(n)[:, None] * theta
    q = turn(inputs @ W_query, angle)
    k = turn(inputs @ W_key, angle)
    weights = torch.softmax(q @ k.T / d**0.5, dim=-1)
    return weights @ (inputs @ W_value)
