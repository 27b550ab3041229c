"""Sliding-window attention with unfold: each query gets the window of keys ending at it."""

import torch
import torch.nn.functional as F


def attention(inputs, W_query, W_key, W_value, window):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n, d = k.shape
    pad_k = F.pad(k, (0, 0, window - 1, 0))
    pad_v = F.pad(v, (0, 0, window - 1, 0))
    k_win = pad_k.unfold(0, window, 1).transpose(1, 2)
    v_win = pad_v.unfold(0, window, 1).transpose(1, 2)
    scores = torch.einsum("nd,nwd->nw", q, k_win) / d**0.5
    valid = torch.arange(n)[:, None] - (window - 1) + torch.arange(window)[None, :] >= 0
    scores = scores.masked_fill(~valid, float("-inf"))
    weights = scores.softmax(-1)
    return torch.einsum("nw,nwd->nd", weights, v_win)


# expect: --against sliding-window -> ok
