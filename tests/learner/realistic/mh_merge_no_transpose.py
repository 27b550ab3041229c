import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads

    def heads(x):
        return x.view(n, num_heads, head_dim).transpose(0, 1)

    q, k, v = heads(inputs @ W_query), heads(inputs @ W_key), heads(inputs @ W_value)
    scores = q @ k.transpose(-2, -1) / head_dim**0.5
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    merged = (weights @ v).reshape(n, d_out)
    return merged @ W_out + b_out


# expect: --against multihead --d-out 4 -> head-merge at 15
