"""A backward pass whose dX is right but whose returned dQ leaves out 1/√d_k."""

import torch


def attention(inputs, W_query, W_key, W_value):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    d_k = K.shape[-1]
    P = torch.softmax(Q @ K.T / d_k**0.5, dim=-1)
    dO = torch.ones(P.shape[0], V.shape[1])
    dV = P.T @ dO
    dP = dO @ V.T
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dX = (dS @ K / d_k**0.5) @ W_query.T + (dS.T @ Q / d_k**0.5) @ W_key.T + dV @ W_value.T
    return {"dQ": dS @ K, "dK": dS.T @ Q / d_k**0.5, "dV": dV, "dX": dX}
