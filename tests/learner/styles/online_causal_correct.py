"""Causal online softmax, one key at a time."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n, d = k.shape
    out = torch.zeros(n, v.shape[1])
    for i in range(n):
        m, total, acc = -torch.inf, torch.tensor(0.0), torch.zeros(v.shape[1])
        for j in range(i + 1):
            s = q[i] @ k[j] / d**0.5
            m_new = torch.maximum(torch.tensor(m), s)
            total = total * torch.exp(m - m_new) + torch.exp(s - m_new)
            acc = acc * torch.exp(m - m_new) + torch.exp(s - m_new) * v[j]
            m = m_new
        out[i] = acc / total
    return out


# expect: --against online-softmax -o causal=true -> ok
