import torch


def attention(inputs):
    return torch.empty(inputs.shape, device="meta")
