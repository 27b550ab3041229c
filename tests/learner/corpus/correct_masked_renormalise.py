import torch


def attention(inputs, W_query, W_key, W_value):
    n = inputs.shape[0]
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    weights = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
    keep = torch.tril(torch.ones(n, n))
    weights = weights * keep
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ values


# expect: --against masked -> ok
