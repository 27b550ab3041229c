import torch


def attention(inputs, W_query, W_key, W_value):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    scores = queries @ keys.T
    d_k = keys.shape[-1]
    scaled = scores / d_k
    weights = torch.softmax(scaled, dim=-1)
    return weights @ values


# expect: --against trainable -> scaling at 10
