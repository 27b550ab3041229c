"""One query at a time under vmap; the query's own value vector is added to the mix."""

import math

import torch
from torch.func import vmap


def one_query(q, v_self, position, K, V):
    scores = (K @ q) / math.sqrt(K.shape[-1])
    scores = scores.masked_fill(torch.arange(K.shape[0]) > position, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V + v_self


def attention(inputs, W_query, W_key, W_value):
    Q = inputs @ W_query
    K = inputs @ W_key
    V = inputs @ W_value
    positions = torch.arange(inputs.shape[0])
    return vmap(one_query, in_dims=(0, 0, 0, None, None))(Q, V, positions, K, V)


# expect: --against masked -> plus-tensor at 13
