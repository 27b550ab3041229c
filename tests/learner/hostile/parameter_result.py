"""Correct, but returned as an nn.Parameter (a tensor subclass)."""

import torch


def attention(inputs):
    return torch.nn.Parameter(torch.softmax(inputs @ inputs.T, dim=-1) @ inputs)
