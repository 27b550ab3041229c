"""A paged KV cache that takes blocks from the end of its free list and reads them back in
the pool's order (sorted block numbers) instead of its block table's order."""

import torch


def attention(inputs, W_query, W_key, W_value, block=2):
    n, d = inputs.shape[0], W_key.shape[1]
    num_blocks = -(-n // block)
    k_pool = torch.zeros(num_blocks, block, d)
    v_pool = torch.zeros(num_blocks, block, d)
    free = list(range(num_blocks))
    table = []
    out = []
    for t in range(n):
        x = inputs[t]
        if t % block == 0:
            table.append(free.pop())
        k_pool[table[t // block], t % block] = x @ W_key
        v_pool[table[t // block], t % block] = x @ W_value
        k = k_pool[sorted(table)].reshape(-1, d)[: t + 1]
        v = v_pool[sorted(table)].reshape(-1, d)[: t + 1]
        w = torch.softmax(k @ (x @ W_query) / d**0.5, dim=-1)
        out.append(w @ v)
    return torch.stack(out)
