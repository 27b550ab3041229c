"""A backward pass returning a dataclass of gradients whose names say nothing to attn check:
the output (dX) is the one field shaped like the inputs."""

from dataclasses import dataclass

import torch


@dataclass
class Gradients:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    x: torch.Tensor


def backward_pass(inputs, W_query, W_key, W_value):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scale = K.shape[-1] ** -0.5
    P = torch.softmax(Q @ K.T * scale, dim=-1)
    dO = torch.ones(P.shape[0], V.shape[1])
    dV = P.T @ dO
    dP = dO @ V.T
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dQ, dK = dS @ K * scale, dS.T @ Q * scale
    dX = dQ @ W_query.T + dK @ W_key.T + dV @ W_value.T
    return Gradients(q=dQ, k=dK, v=dV, x=dX)
