import torch


def attention(inputs):
    n = inputs.shape[0]
    scores = torch.zeros(n, n)
    for i in range(n - 1):
        for j in range(n):
            scores[i, j] = inputs[i] @ inputs[j]
    weights = torch.softmax(scores, dim=-1)
    return weights @ inputs


# expect: --against naive-loop -> loop-range at 7
