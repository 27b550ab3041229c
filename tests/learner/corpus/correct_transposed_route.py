import torch


def attention(inputs, W_query, W_key, W_value):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    scores = queries @ keys.T
    return (values.T @ torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1).T).T


# expect: --against trainable -> ok
