import torch


def attention(inputs):
    return torch.full(inputs.shape, float("nan"))
