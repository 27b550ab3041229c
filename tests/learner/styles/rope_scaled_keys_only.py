"""Position interpolation (linear RoPE scaling) applied to the keys' angles only."""

import torch


def turn(x, theta):
    angle = torch.arange(x.shape[0]).unsqueeze(1) * theta
    a, b = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2] = a * angle.cos() - b * angle.sin()
    out[:, 1::2] = a * angle.sin() + b * angle.cos()
    return out


def attention(inputs, W_query, W_key, W_value, base=10000.0, factor=1.0):
    d = W_query.shape[1]
    theta = base ** (-torch.arange(0, d, 2) / d)
    q = turn(inputs @ W_query, theta)
    k = turn(inputs @ W_key, theta / factor)
    weights = torch.softmax(q @ k.T / d**0.5, dim=-1)
    return weights @ (inputs @ W_value)


# expect: --against rope --d-out 4 -o scaling=linear -o factor=2 -> rope-scaling-keys-only at 18
