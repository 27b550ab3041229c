import torch


def rotate(x, base):
    n, d = x.shape
    theta = base ** (-torch.arange(0, d, 2) / d)
    angle = torch.arange(n).unsqueeze(1) * theta
    even, odd = x[:, 0::2], x[:, 1::2]
    turned = torch.empty_like(x)
    turned[:, 0::2] = even * torch.cos(angle) - odd * torch.sin(angle)
    turned[:, 1::2] = even * torch.sin(angle) + odd * torch.cos(angle)
    return turned


def attention(inputs, W_query, W_key, W_value, base=10000.0):
    queries = rotate(inputs @ W_query, base)
    keys = rotate(inputs @ W_key, base)
    values = inputs @ W_value
    weights = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ values
