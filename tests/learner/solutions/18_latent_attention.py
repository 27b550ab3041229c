import torch


def rope(x):
    d = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2) / d)
    angle = torch.arange(x.shape[-2]).unsqueeze(1) * theta
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * torch.cos(angle) - odd * torch.sin(angle)
    out[..., 1::2] = even * torch.sin(angle) + odd * torch.cos(angle)
    return out


def attention(inputs, W_query, W_dkv, W_uk, W_uv, W_qr, W_kr, W_out, b_out, num_heads):
    n, d_out = inputs.shape[0], W_query.shape[1]
    head_dim, rank = d_out // num_heads, W_dkv.shape[1]
    rope_dim = W_kr.shape[1]
    latent = inputs @ W_dkv  # (tokens, rank): what the cache keeps
    key_rope = rope(inputs @ W_kr)  # (tokens, rope_dim), shared by every head
    query = (inputs @ W_query).view(n, num_heads, head_dim).transpose(0, 1)
    query_rope = rope((inputs @ W_qr).view(n, num_heads, rope_dim).transpose(0, 1))
    W_uk = W_uk.view(rank, num_heads, head_dim).permute(1, 0, 2)  # (heads, rank, head_dim)
    W_uv = W_uv.view(rank, num_heads, head_dim).permute(1, 0, 2)
    absorbed = query @ W_uk.transpose(1, 2)
    scores = (absorbed @ latent.T + query_rope @ key_rope.T) / (head_dim + rope_dim) ** 0.5
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)
    mixed = weights @ latent  # (heads, tokens, rank)
    folded = W_uv @ W_out.view(num_heads, head_dim, d_out)  # (heads, rank, d_out)
    return (mixed @ folded).sum(dim=0) + b_out
