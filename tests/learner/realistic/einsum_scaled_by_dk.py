import torch


def attention(inputs, W_query, W_key, W_value):
    b, n, _ = inputs.shape
    q = torch.einsum("bnd,de->bne", inputs, W_query)
    k = torch.einsum("bnd,de->bne", inputs, W_key)
    v = torch.einsum("bnd,de->bne", inputs, W_value)
    scores = torch.einsum("bqe,bke->bqk", q, k) / k.shape[-1]
    weights = scores.softmax(dim=-1)
    return torch.einsum("bqk,bke->bqe", weights, v)


# expect: --against trainable --d-out 4 -> scaling at 9
