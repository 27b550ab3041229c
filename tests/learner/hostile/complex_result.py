import torch


def attention(inputs):
    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs + 1j
