import torch


def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0)


def attention(inputs):
    attn_scores = inputs @ inputs.T
    attn_weights = softmax_naive(attn_scores)
    return attn_weights @ inputs


# expect: --against vectorized -> softmax-dim at 5
