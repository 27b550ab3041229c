"""A backward pass that returns its gradients by name: dQ, dK, dV and dX (the output)."""

import torch


def attention(inputs, W_query, W_key, W_value):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    d_k = K.shape[-1]
    S = Q @ K.T / d_k**0.5
    P = torch.softmax(S, dim=-1)
    O = P @ V  # noqa: E741
    dO = torch.ones_like(O)
    dV = P.T @ dO
    dP = dO @ V.T
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dQ = dS @ K / d_k**0.5
    dK = dS.T @ Q / d_k**0.5
    dX = dQ @ W_query.T + dK @ W_key.T + dV @ W_value.T
    return {"dQ": dQ, "dK": dK, "dV": dV, "dX": dX}
