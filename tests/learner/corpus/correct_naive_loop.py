import torch


def attention(inputs):
    n = inputs.shape[0]
    scores = torch.empty(n, n)
    for i, query in enumerate(inputs):
        for j, key in enumerate(inputs):
            scores[i, j] = torch.dot(query, key)
    weights = torch.softmax(scores, dim=-1)
    context = torch.zeros_like(inputs)
    for i in range(n):
        for j, value in enumerate(inputs):
            context[i] += weights[i, j] * value
    return context


# expect: --against naive-loop -> ok
