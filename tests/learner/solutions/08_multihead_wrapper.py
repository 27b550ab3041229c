import torch


def causal_attention(inputs, W_query, W_key, W_value):
    n = inputs.shape[0]
    queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
    mask = torch.triu(torch.ones(n, n), diagonal=1).bool()
    scores = (queries @ keys.T).masked_fill(mask, -torch.inf)
    return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values


def attention(inputs, W_query, W_key, W_value):
    heads = [
        causal_attention(inputs, W_query[h], W_key[h], W_value[h]) for h in range(len(W_query))
    ]
    return torch.cat(heads, dim=-1)
