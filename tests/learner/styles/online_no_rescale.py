"""Online softmax that forgets to rescale what it has summed when the maximum grows."""

import torch


def attention(inputs, W_query, W_key, W_value, tile=2):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n = q.shape[0]
    m = torch.full((n, 1), -torch.inf)
    l = torch.zeros(n, 1)
    acc = torch.zeros(n, v.shape[1])
    for s in range(0, k.shape[0], tile):
        scores = q @ k[s : s + tile].T / k.shape[1] ** 0.5
        m = torch.maximum(m, scores.max(dim=1, keepdim=True).values)
        p = torch.exp(scores - m)
        l = l + p.sum(dim=1, keepdim=True)
        acc = acc + p @ v[s : s + tile]
    return acc / l


# expect: --against online-softmax -> no-rescale at 16
