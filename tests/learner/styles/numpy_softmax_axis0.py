"""numpy causal attention normalising down the columns."""

import numpy as np


def attention(inputs, W_query, W_key, W_value):
    Q = inputs @ W_query
    K = inputs @ W_key
    V = inputs @ W_value
    n, d = K.shape
    S = Q @ K.T / np.sqrt(d)
    S[np.triu_indices(n, k=1)] = -np.inf
    P = np.exp(S - S.max(axis=0, keepdims=True))
    P /= P.sum(axis=0, keepdims=True)
    return P @ V


# expect: --against masked -> softmax-dim at 13
