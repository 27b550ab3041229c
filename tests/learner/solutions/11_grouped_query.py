import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads
    kv_heads = W_key.shape[1] // head_dim
    queries = (inputs @ W_query).view(n, num_heads, head_dim).transpose(0, 1)
    keys = (inputs @ W_key).view(n, kv_heads, head_dim).transpose(0, 1)
    values = (inputs @ W_value).view(n, kv_heads, head_dim).transpose(0, 1)
    group = num_heads // kv_heads
    keys = keys.repeat_interleave(group, dim=0)
    values = values.repeat_interleave(group, dim=0)
    scores = queries @ keys.transpose(1, 2) / head_dim**0.5
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)
    context = (weights @ values).transpose(0, 1).contiguous().view(n, d_out)
    return context @ W_out + b_out
