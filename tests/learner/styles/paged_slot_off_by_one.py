"""A paged KV cache that writes each token one slot too late (positions counted from 1)."""

import torch


def attention(inputs, W_query, W_key, W_value, block=2):
    n, d = inputs.shape[0], W_key.shape[1]
    num_blocks = n // block + 1
    k_cache = torch.zeros(num_blocks, block, d)
    v_cache = torch.zeros(num_blocks, block, d)
    block_table = list(range(num_blocks))
    out = []
    for t in range(n):
        x = inputs[t]
        pos = t + 1
        k_cache[block_table[pos // block], pos % block] = x @ W_key
        v_cache[block_table[pos // block], pos % block] = x @ W_value
        k = k_cache.reshape(-1, d)[: t + 1]
        v = v_cache.reshape(-1, d)[: t + 1]
        w = torch.softmax(k @ (x @ W_query) / d**0.5, dim=-1)
        out.append(w @ v)
    return torch.stack(out)


# expect: --against paged-kv-cache -o block=2 -> block-table-off-by-one at 16
