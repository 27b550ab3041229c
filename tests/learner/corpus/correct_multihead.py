import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim = d_out // num_heads

    def split(x):
        return x.view(n, num_heads, head_dim).transpose(0, 1)

    queries, keys, values = split(inputs @ W_query), split(inputs @ W_key), split(inputs @ W_value)
    scores = queries @ keys.transpose(1, 2)
    mask = torch.triu(torch.ones(n, n), diagonal=1).bool()
    scores = scores.masked_fill(mask, -torch.inf)
    weights = torch.softmax(scores / head_dim**0.5, dim=-1)
    context = (weights @ values).transpose(0, 1).contiguous().view(n, d_out)
    return context @ W_out + b_out


# expect: --against multihead -> ok
