"""Softcapped attention that forgets to divide by the cap inside tanh: right only at cap=1."""

import torch


def attention(inputs, W_query, W_key, W_value, cap=1.0):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = q @ k.T / k.shape[-1] ** 0.5
    capped = cap * torch.tanh(scores)
    return torch.softmax(capped, dim=-1) @ v
