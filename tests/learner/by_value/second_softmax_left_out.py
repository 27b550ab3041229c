"""The first softmax alone: the variant's ``Difference`` subtracts half the second."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    half = q.shape[-1] // 2
    first = torch.softmax(q[:, :half] @ k[:, :half].T / half**0.5, dim=-1)
    second = torch.softmax(q[:, half:] @ k[:, half:].T / half**0.5, dim=-1)  # noqa: F841
    return first @ v
