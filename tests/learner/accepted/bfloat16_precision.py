"""Attention computed in bfloat16, returned as float32."""

import torch


def attention(inputs, W_query, W_key, W_value):
    x = inputs.bfloat16()
    queries, keys, values = x @ W_query.bfloat16(), x @ W_key.bfloat16(), x @ W_value.bfloat16()
    scores = queries @ keys.T / keys.shape[-1] ** 0.5
    weights = torch.softmax(scores.float(), dim=-1).bfloat16()
    return (weights @ values).float()
