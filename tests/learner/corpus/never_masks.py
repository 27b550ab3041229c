import torch


def attention(inputs, W_query, W_key, W_value):
    n = inputs.shape[0]
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    scores = queries @ keys.T / keys.shape[-1] ** 0.5
    mask = torch.triu(torch.ones(n, n), diagonal=1).bool()
    weights = torch.softmax(scores, dim=-1)
    return weights @ values


# expect: --against masked -> mask-unused at 10
