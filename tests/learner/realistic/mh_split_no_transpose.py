import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads
    q = (inputs @ W_query).reshape(num_heads, n, head_dim)
    k = (inputs @ W_key).reshape(num_heads, n, head_dim)
    v = (inputs @ W_value).reshape(num_heads, n, head_dim)
    scores = q @ k.transpose(1, 2) / head_dim**0.5
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    merged = (weights @ v).transpose(0, 1).reshape(n, d_out)
    return merged @ W_out + b_out


# expect: --against multihead --d-out 4 -> head-split at 7
