"""Decoding with a cache; the scores are scaled by the cache length instead of sqrt(d)."""

import torch


def attention(inputs, W_query, W_key, W_value):
    d = W_query.shape[1]
    K = torch.zeros(0, d)
    V = torch.zeros(0, d)
    rows = []
    for t in range(inputs.shape[0]):
        x = inputs[t : t + 1]
        K = torch.cat([K, x @ W_key])
        V = torch.cat([V, x @ W_value])
        scores = (x @ W_query) @ K.T / K.shape[0]
        rows.append(torch.softmax(scores, dim=-1) @ V)
    return torch.cat(rows)


# expect: --against kv-cache -> scaled-by at 15
