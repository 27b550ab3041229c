import torch


def attention(inputs):
    for x in inputs:
        x /= x.norm()
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return weights @ inputs


# expect: --against vectorized -> inputs-mutated at 6
