"""bmm attention with a hand-written stable softmax that subtracts each column's maximum."""

import torch


def stable_softmax(s):
    s = s - s.max(dim=1, keepdim=True).values
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


def attention(inputs, W_query, W_key, W_value):
    x = inputs.unsqueeze(0)
    q = torch.bmm(x, W_query.unsqueeze(0))
    k = torch.bmm(x, W_key.unsqueeze(0))
    v = torch.bmm(x, W_value.unsqueeze(0))
    scores = torch.bmm(q, k.transpose(1, 2)) / (k.size(-1) ** 0.5)
    keep = torch.ones(x.size(1), x.size(1)).tril()
    scores = scores.masked_fill(keep == 0, -1e9)
    return torch.bmm(stable_softmax(scores), v).squeeze(0)


# expect: --against masked -> row-column-factor at 7
