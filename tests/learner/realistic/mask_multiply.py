import torch


def attention(inputs, W_query, W_key, W_value):
    n = inputs.shape[0]
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    scores = q @ k.T / k.shape[-1] ** 0.5
    scores = scores * torch.tril(torch.ones(n, n))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v


# expect: --against masked -> mask-multiply at 8
