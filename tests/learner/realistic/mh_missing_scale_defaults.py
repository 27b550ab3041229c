import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads
    q = (inputs @ W_query).view(n, num_heads, head_dim).transpose(0, 1)
    k = (inputs @ W_key).view(n, num_heads, head_dim).transpose(0, 1)
    v = (inputs @ W_value).view(n, num_heads, head_dim).transpose(0, 1)
    scores = q @ k.transpose(1, 2)
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(causal, -torch.inf), dim=-1)
    context = (weights @ v).transpose(0, 1).contiguous().view(n, d_out)
    return context @ W_out + b_out


# expect: --against multihead -> scaling at 12
