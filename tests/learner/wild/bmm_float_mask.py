"""Batched matrix products with a float lower-triangular mask and -1e9 fill."""

import torch


def attention(inputs, W_query, W_key, W_value):
    x = inputs.unsqueeze(0)
    q = torch.bmm(x, W_query.unsqueeze(0))
    k = torch.bmm(x, W_key.unsqueeze(0))
    v = torch.bmm(x, W_value.unsqueeze(0))
    scores = torch.bmm(q, k.transpose(1, 2)) / (k.size(-1) ** 0.5)
    keep = torch.ones(x.size(1), x.size(1)).tril()
    scores = scores.masked_fill(keep == 0, -1e9)
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, v).squeeze(0)


# expect: --against masked -> ok
