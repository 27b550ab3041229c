import torch


def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    context = weights @ inputs  # the mistake under test: no return
