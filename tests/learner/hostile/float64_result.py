"""Correct, computed in float64: a different dtype is fine when the values agree."""

import torch


def attention(inputs):
    x = inputs.double()
    return torch.softmax(x @ x.T, dim=-1) @ x
