import torch


def causal_head(inputs, W_query, W_key, W_value):
    n = inputs.shape[0]
    queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = queries @ keys.T
    scores = scores.masked_fill(torch.triu(torch.ones(n, n), diagonal=1).bool(), -torch.inf)
    return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values


def attention(inputs, W_query, W_key, W_value):
    heads = [causal_head(inputs, W_query[h], W_key[h], W_value[h]) for h in range(len(W_query))]
    stacked = torch.stack(heads[::-1])
    return torch.cat(list(stacked), dim=-1)


# expect: --against multihead-wrapper --heads 3 -> reversed at 14
