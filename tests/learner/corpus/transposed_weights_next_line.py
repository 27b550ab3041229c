import torch


def attention(inputs, W_query, W_key, W_value):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    scores = queries @ keys.T
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    weights = weights.transpose(0, 1)
    return weights @ values


# expect: --against trainable -> transpose at 10
