"""Rotary-style pairs in numpy that write only the first of each pair: the rest of the array
is left as ``np.empty_like`` made it (no values at all)."""

import numpy as np


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = np.empty_like(q @ k.T)
    scores[:, 0::2] = (q @ k.T)[:, 0::2] / np.sqrt(k.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v
