import torch


def attention(inputs):
    scores = inputs @ inputs.T
    weights = scores.exp() / scores.exp().sum()
    return weights @ inputs


# expect: --against vectorized -> softmax-all at 6
