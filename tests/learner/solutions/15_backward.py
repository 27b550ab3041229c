"""Exercise 15, solved."""

import torch


def attention(inputs, W_query, W_key, W_value, causal=False):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n, d_k = Q.shape[0], K.shape[-1]
    S = Q @ K.T / d_k**0.5
    if causal:
        S = S.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)
    P = torch.softmax(S, dim=-1)
    O = P @ V  # noqa: E741
    dO = torch.ones_like(O)
    dV = P.T @ dO
    dP = dO @ V.T
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dQ = dS @ K / d_k**0.5
    dK = dS.T @ Q / d_k**0.5
    return dQ @ W_query.T + dK @ W_key.T + dV @ W_value.T
