"""numpy attention that divides by d_k instead of its square root."""

import numpy as np


def attention(inputs, W_query, W_key, W_value):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    d_k = keys.shape[1]
    scores = queries @ keys.T / d_k
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = weights / weights.sum(axis=1, keepdims=True)
    return weights @ values


# expect: --against trainable --d-out 4 -> scaling at 11
