"""Multi-head attention as one function, with the names a paper's notation suggests."""

import torch


def multi_head_attention(x, w_q, w_k, w_v, w_o, b_o, n_heads):
    T, _ = x.shape
    d = w_q.shape[1]
    hd = d // n_heads
    q = torch.einsum("td,dh->th", x, w_q).reshape(T, n_heads, hd).permute(1, 0, 2)
    k = torch.einsum("td,dh->th", x, w_k).reshape(T, n_heads, hd).permute(1, 0, 2)
    v = torch.einsum("td,dh->th", x, w_v).reshape(T, n_heads, hd).permute(1, 0, 2)
    s = torch.einsum("hqe,hke->hqk", q, k) / hd**0.5
    s = s + torch.full((T, T), float("-inf")).triu(1)
    a = s.softmax(dim=-1)
    z = torch.einsum("hqk,hke->qhe", a, v).reshape(T, d)
    return z @ w_o + b_o


# expect: --against multihead --heads 2 --d-out 4 -> ok
