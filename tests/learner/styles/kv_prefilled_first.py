"""A KV cache that starts with the first token's key and value, then decodes from token 0."""

import torch


def attention(inputs, W_query, W_key, W_value):
    d = W_query.shape[1]
    K, V = inputs[:1] @ W_key, inputs[:1] @ W_value
    rows = []
    for x in inputs:
        K = torch.cat([K, (x @ W_key)[None]])
        V = torch.cat([V, (x @ W_value)[None]])
        w = torch.softmax(K @ (x @ W_query) / d**0.5, dim=0)
        rows.append(w @ V)
    return torch.stack(rows)


# expect: --against kv-cache -> cache-prefilled at 8
