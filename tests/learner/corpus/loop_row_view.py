import torch


def attention(inputs):
    n = inputs.shape[0]
    scores = torch.empty(n, n)
    for i in range(n):
        for j in range(n):
            scores[i][j] = torch.dot(inputs[i], inputs[i])
    weights = torch.softmax(scores, dim=-1)
    return weights @ inputs
