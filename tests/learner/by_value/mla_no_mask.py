"""Latent attention, keys and values rebuilt per head, with no causal mask: every query sees
the keys after it."""

import torch


def rope(x):
    d = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2) / d)
    angle = torch.arange(x.shape[-2])[:, None] * theta
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    turned = z * torch.polar(torch.ones_like(angle), angle)
    return torch.view_as_real(turned).flatten(-2)


def attention(inputs, W_query, W_dkv, W_uk, W_uv, W_qr, W_kr, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    hd, rd = d_out // num_heads, W_kr.shape[1]
    c = inputs @ W_dkv
    k_pe = rope(inputs @ W_kr)
    q = (inputs @ W_query).view(n, num_heads, hd).transpose(0, 1)
    q_pe = rope((inputs @ W_qr).view(n, num_heads, rd).transpose(0, 1))
    k = (c @ W_uk).view(n, num_heads, hd).transpose(0, 1)
    v = (c @ W_uv).view(n, num_heads, hd).transpose(0, 1)
    scores = (q @ k.transpose(1, 2) + q_pe @ k_pe.T) / (hd + rd) ** 0.5
    p = torch.softmax(scores, dim=-1)
    out = p @ v
    return out.transpose(0, 1).reshape(n, d_out) @ W_out + b_out
