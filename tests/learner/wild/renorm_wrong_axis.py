"""Masking after the softmax and renormalising, but over the wrong axis."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    w = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)
    w = w * torch.tril(torch.ones(len(w), len(w)))
    w = w / w.sum(dim=0, keepdim=True)
    return w @ v


# expect: --against masked -> other-axis at 10
