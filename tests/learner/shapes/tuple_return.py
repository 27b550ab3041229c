"""Returns (context, weights), as many tutorials do."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    weights = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)
    return weights @ v, weights


# expect: --against trainable -> ok
