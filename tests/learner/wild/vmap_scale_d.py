"""Per-query attention under vmap; the scores are divided by d instead of sqrt(d)."""

import torch


def attend(q, t, K, V):
    s = (K @ q) / K.shape[1]
    s = torch.where(torch.arange(K.shape[0]) <= t, s, float("-inf"))
    return s.softmax(0) @ V


def attention(inputs, W_query, W_key, W_value):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    return torch.vmap(attend, in_dims=(0, 0, None, None))(Q, torch.arange(len(Q)), K, V)


# expect: --against masked --d-out 4 -> scaling at 7
