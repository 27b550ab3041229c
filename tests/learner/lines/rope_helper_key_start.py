"""Rotary embeddings through one helper, right for the queries and given the wrong start for
the keys: the mistake is the call's argument, not the helper."""

import torch


def rotate(x, start):
    n, d = x.shape
    theta = 10000.0 ** (-torch.arange(0, d, 2) / d)
    angle = torch.arange(start, start + n)[:, None] * theta
    a, b = x[:, 0::2], x[:, 1::2]
    turned = torch.stack((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()))
    return turned.permute(1, 2, 0).flatten(1)


def attention(inputs, W_query, W_key, W_value):
    q = rotate(inputs @ W_query, 0)
    k = rotate(inputs @ W_key, 1)
    weights = torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1)
    return weights @ (inputs @ W_value)
