import torch


def attention(inputs):
    scores = inputs @ inputs.T
    weights = torch.softmax(scores, dim=-1)
    return weights @ inputs


# expect: --against vectorized -> ok
