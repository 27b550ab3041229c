"""Latent attention absorbed as inference does, with W_uk folded in without its transpose."""

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
    hd, r, rd = d_out // num_heads, W_dkv.shape[1], W_kr.shape[1]
    c = inputs @ W_dkv
    k_pe = rope(inputs @ W_kr)
    q = (inputs @ W_query).view(n, num_heads, hd).transpose(0, 1)
    q_pe = rope((inputs @ W_qr).view(n, num_heads, rd).transpose(0, 1))
    wkv_b_k = W_uk.view(r, num_heads, hd).permute(1, 0, 2)
    wkv_b_v = W_uv.view(r, num_heads, hd).permute(1, 0, 2)
    q_nope = torch.einsum("hnd,hdc->hnc", q, wkv_b_k)
    scores = (q_nope @ c.T + q_pe @ k_pe.T) / (hd + rd) ** 0.5
    mask = torch.ones(n, n, dtype=torch.bool).triu(1)
    p = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    out = torch.einsum("hnc,hcd->hnd", p @ c, wkv_b_v)
    return out.transpose(0, 1).reshape(n, d_out) @ W_out + b_out


# expect: --against mla --d-out 4 -o rank=2 -o absorb=true -> absorb-transpose at 24
