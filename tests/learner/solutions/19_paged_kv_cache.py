import torch


def attention(inputs, W_query, W_key, W_value, block=2):
    n, d_out = inputs.shape[0], W_key.shape[1]
    blocks = (n + block - 1) // block
    key_pool = torch.zeros(blocks, block, d_out)
    value_pool = torch.zeros(blocks, block, d_out)
    free = list(range(blocks - 1, -1, -1))
    table = []
    rows = []
    for t, x in enumerate(inputs):
        query = x @ W_query
        if t % block == 0:
            table.append(free.pop())
        key_pool[table[t // block], t % block] = x @ W_key
        value_pool[table[t // block], t % block] = x @ W_value
        keys = key_pool[table].reshape(-1, d_out)[: t + 1]
        values = value_pool[table].reshape(-1, d_out)[: t + 1]
        weights = torch.softmax(keys @ query / d_out**0.5, dim=-1)
        rows.append(weights @ values)
    return torch.stack(rows)
