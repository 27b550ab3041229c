import torch


def attention(inputs, W_query, W_key, W_value):
    queries = inputs @ W_query
    keys = inputs @ W_key
    scores = queries @ keys
    return torch.softmax(scores, dim=-1)
