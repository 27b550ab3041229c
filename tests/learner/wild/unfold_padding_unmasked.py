"""Sliding-window attention with unfold; the zero padding at the start is never masked."""

import torch
import torch.nn.functional as F


def attention(inputs, W_query, W_key, W_value, window_size):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n, d = k.shape
    k_win = F.pad(k, (0, 0, window_size - 1, 0)).unfold(0, window_size, 1).transpose(1, 2)
    v_win = F.pad(v, (0, 0, window_size - 1, 0)).unfold(0, window_size, 1).transpose(1, 2)
    scores = torch.einsum("nd,nwd->nw", q, k_win) / d**0.5
    weights = scores.softmax(-1)
    return torch.einsum("nw,nwd->nd", weights, v_win)


# expect: --against sliding-window -> padding-attended at 13
