import torch


def attention(inputs, W_query, W_key, W_value):
    q = torch.einsum("nd,de->ne", inputs, W_query)
    k = torch.einsum("nd,de->ne", inputs, W_key)
    v = torch.einsum("nd,de->ne", inputs, W_value)
    scores = torch.einsum("qe,ke->kq", q, k)
    weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
    return torch.einsum("qk,ke->qe", weights, v)


# expect: --against trainable -> transpose at 8
