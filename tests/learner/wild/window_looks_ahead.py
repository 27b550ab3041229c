"""Sliding-window attention in einsum; the band is symmetric, so it also looks ahead."""

import torch


def attention(inputs, W_query, W_key, W_value, window=3):
    q = torch.einsum("td,de->te", inputs, W_query)
    k = torch.einsum("td,de->te", inputs, W_key)
    v = torch.einsum("td,de->te", inputs, W_value)
    raw = torch.einsum("qe,ke->qk", q, k)
    scaled = raw / k.shape[-1] ** 0.5
    i = torch.arange(inputs.shape[0])
    far = (i[:, None] - i[None, :]).abs() >= window
    scaled = scaled.masked_fill(far, float("-inf"))
    return torch.einsum("qk,ke->qe", scaled.softmax(-1), v)


# expect: --against sliding-window -> window-symmetric at 13
