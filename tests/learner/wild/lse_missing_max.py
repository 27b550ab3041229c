"""Softmax through log-sum-exp, where the maximum is never added back."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q = torch.einsum("nd,de->ne", inputs, W_query)
    k = torch.einsum("nd,de->ne", inputs, W_key)
    v = torch.einsum("nd,de->ne", inputs, W_value)
    s = torch.einsum("qe,ke->qk", q, k) / k.shape[-1] ** 0.5
    m = s.max(dim=-1, keepdim=True).values
    lse = torch.log(torch.exp(s - m).sum(dim=-1, keepdim=True))
    log_weights = s - lse
    return torch.einsum("qk,ke->qe", log_weights.exp(), v)


# expect: --against trainable -> row-offset at 12
