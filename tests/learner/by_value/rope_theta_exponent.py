"""Rotary embeddings with θ_i = base^(−i/d) instead of base^(−2i/d): angles of another size,
not one of the relations attn check names (it must not call it one)."""

import torch


def turn(x, angle):
    a, b = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = a * angle.cos() - b * angle.sin()
    out[:, 1::2] = a * angle.sin() + b * angle.cos()
    return out


def attention(inputs, W_query, W_key, W_value, base=10000.0):
    n, d = inputs.shape[0], W_query.shape[1]
    theta = base ** (-torch.arange(0, d // 2) / d)
    angle = torch.arange(n)[:, None] * theta
    q = turn(inputs @ W_query, angle)
    k = turn(inputs @ W_key, angle)
    weights = torch.softmax(q @ k.T / d**0.5, dim=-1)
    return weights @ (inputs @ W_value)
