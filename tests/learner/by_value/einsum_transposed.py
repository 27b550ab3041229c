"""Scores written with einsum letters that put the keys first: "qd,kd->kq" gives Kqᵀ, the
scores transposed, and the softmax then runs over the queries."""

import numpy as np


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = np.einsum("qd,kd->kq", q, k) / np.sqrt(k.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v
