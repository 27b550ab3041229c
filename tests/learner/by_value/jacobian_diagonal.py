"""A backward pass whose softmax Jacobian keeps its diagonal only: J = diag(p), without
the − p pᵀ part."""

import torch


def attention(inputs, W_query, W_key, W_value):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    d_k = K.shape[-1]
    P = torch.softmax(Q @ K.T / d_k**0.5, dim=-1)
    O = P @ V  # noqa: E741
    dO = torch.ones_like(O)
    dV = P.T @ dO
    dP = dO @ V.T
    rows = []
    for p, dp in zip(P, dP, strict=True):
        J = torch.diag(p)
        rows.append(J @ dp)
    dS = torch.stack(rows)
    dQ = dS @ K / d_k**0.5
    dK = dS.T @ Q / d_k**0.5
    return dQ @ W_query.T + dK @ W_key.T + dV @ W_value.T
