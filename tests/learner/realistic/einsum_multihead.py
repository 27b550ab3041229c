import torch


def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    hd = d_out // num_heads
    q = torch.einsum("nd,de->ne", inputs, W_query).view(n, num_heads, hd)
    k = torch.einsum("nd,de->ne", inputs, W_key).view(n, num_heads, hd)
    v = torch.einsum("nd,de->ne", inputs, W_value).view(n, num_heads, hd)
    scores = torch.einsum("qhe,khe->hqk", q, k) / hd**0.5
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    context = torch.einsum("hqk,khe->qhe", weights, v).reshape(n, d_out)
    return context @ W_out + b_out


# expect: --against multihead --d-out 4 --init randn -> ok
