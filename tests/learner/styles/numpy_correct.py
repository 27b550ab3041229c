"""Causal self-attention in numpy alone, as a learner who knows numpy better than torch writes it."""

import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = q @ k.T / np.sqrt(k.shape[-1])
    n = scores.shape[0]
    scores = np.where(np.triu(np.ones((n, n)), k=1) == 1, -np.inf, scores)
    return softmax(scores) @ v


# expect: --against masked -> ok
