import torch


def attention(inputs, W_query, W_key, W_value):
    n = inputs.shape[0]
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    scores = queries @ keys.T
    mask = torch.triu(torch.ones(n, n), diagonal=1).bool()
    scores = scores.masked_fill(mask, 0.0)
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ values


# expect: --against masked -> fill-zero at 11
