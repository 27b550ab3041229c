"""Softcapped attention, right at every cap."""

import torch


def attention(inputs, W_query, W_key, W_value, cap=1.0):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = q @ k.T / k.shape[-1] ** 0.5
    capped = cap * torch.tanh(scores / cap)
    return torch.softmax(capped, dim=-1) @ v
