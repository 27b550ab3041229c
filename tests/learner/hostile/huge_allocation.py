import torch


def attention(inputs):
    return torch.ones(100_000, 100_000)
