"""numpy attention; the softmax's sum is taken without keepdims."""

import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)


def attention(inputs, W_query, W_key, W_value):
    q = inputs @ W_query
    k = inputs @ W_key
    v = inputs @ W_value
    scores = q @ k.T / np.sqrt(k.shape[1])
    weights = softmax(scores)
    return weights @ v


# expect: --against trainable -> keepdims at 8
