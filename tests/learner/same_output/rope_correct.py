"""Rotary embeddings, interleaved pairs, positions from 0: right at every stage."""

import torch


def turn(x, angle):
    a, b = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = a * angle.cos() - b * angle.sin()
    out[:, 1::2] = a * angle.sin() + b * angle.cos()
    return out


def attention(inputs, W_query, W_key, W_value, base=10000.0):
    n, d = inputs.shape[0], W_query.shape[1]
    theta = base ** (-torch.arange(0, d, 2) / d)
    positions = torch.arange(n)[:, None]
    q = turn(inputs @ W_query, positions * theta)
    k = turn(inputs @ W_key, positions * theta)
    weights = torch.softmax(q @ k.T / d**0.5, dim=-1)
    return weights @ (inputs @ W_value)
