"""Rotary embeddings written the Hugging Face way (rotate_half) for a model that pairs neighbours."""

import torch


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def attention(inputs, W_query, W_key, W_value, base=10000.0):
    n, d = inputs.shape[0], W_query.shape[1]
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2).float() / d)
    freqs = torch.outer(torch.arange(n).float(), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()
    q = inputs @ W_query
    k = inputs @ W_key
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    weights = torch.softmax(q @ k.T / d**0.5, dim=-1)
    return weights @ (inputs @ W_value)


# expect: --against rope --d-out 4 -> rope-pairing at 8
