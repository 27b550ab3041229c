"""Per-head loop where every head uses head 0's keys."""

import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    T = inputs.shape[0]
    hd = W_query.shape[1] // num_heads
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    outputs = []
    for h in range(num_heads):
        cols = slice(h * hd, (h + 1) * hd)
        k = K[:, 0:hd]
        scores = Q[:, cols] @ k.T / hd**0.5
        weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        outputs.append(weights @ V[:, cols])
    return torch.cat(outputs, dim=-1) @ W_out + b_out


# expect: --against multihead --heads 2 --d-out 4 -> some-heads at 14
