"""Sliding window in einsum; the band lets each query see one key ahead of itself."""

import torch


def attention(inputs, W_query, W_key, W_value, window=3):
    q = torch.einsum("td,de->te", inputs, W_query)
    k = torch.einsum("td,de->te", inputs, W_key)
    v = torch.einsum("td,de->te", inputs, W_value)
    raw = torch.einsum("qe,ke->qk", q, k)
    scaled = raw / k.shape[-1] ** 0.5
    i = torch.arange(inputs.shape[0])[:, None]
    j = torch.arange(inputs.shape[0])[None, :]
    hidden = (j > i + 1) | (j <= i - window)
    scaled = scaled.masked_fill(hidden, float("-inf"))
    return torch.einsum("qk,ke->qe", scaled.softmax(-1), v)


# expect: --against sliding-window -> masked-only at 14
