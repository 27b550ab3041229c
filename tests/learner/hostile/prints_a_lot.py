import torch

print("x" * 1_000_000)


def attention(inputs):
    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs
