"""A KV cache prefilled with every token's key and value, then appended to as well."""

import torch


def attention(inputs, W_query, W_key, W_value):
    cache_k = inputs @ W_key
    cache_v = inputs @ W_value
    out = []
    for x in inputs:
        cache_k = torch.cat([cache_k, (x @ W_key)[None]])
        cache_v = torch.cat([cache_v, (x @ W_value)[None]])
        w = torch.softmax(cache_k @ (x @ W_query) / cache_k.shape[1] ** 0.5, dim=-1)
        out.append(w @ cache_v)
    return torch.stack(out)


# expect: --against kv-cache -> cache-prefilled at 7
