import torch
import torch.nn.functional as F


def attention(inputs, W_query, W_key, W_value, dropout=0.0):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    n = inputs.shape[0]
    scores = queries @ keys.T / keys.shape[-1] ** 0.5
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)
    weights = F.dropout(weights, p=dropout)
    return weights @ values


# expect: --against masked -> ok
