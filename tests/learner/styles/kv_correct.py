"""Decoding one token at a time with a growing KV cache."""

import torch


def attention(inputs, W_query, W_key, W_value):
    d = W_key.shape[1]
    cache_k = torch.zeros(0, d)
    cache_v = torch.zeros(0, d)
    out = []
    for x in inputs:
        q = x @ W_query
        cache_k = torch.cat([cache_k, (x @ W_key)[None]])
        cache_v = torch.cat([cache_v, (x @ W_value)[None]])
        w = torch.softmax(cache_k @ q / d**0.5, dim=-1)
        out.append(w @ cache_v)
    return torch.stack(out)


# expect: --against kv-cache -> ok
