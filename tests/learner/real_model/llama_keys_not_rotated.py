"""The book's grouped-query attention with the keys' rotation left out."""

import torch
import torch.nn as nn


def apply_rope(x, cos, sin):
    head_dim = x.shape[-1]
    x1 = x[..., : head_dim // 2]
    x2 = x[..., head_dim // 2 :]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos) + (rotated * sin)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, num_heads, num_kv_groups, head_dim, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        self.head_dim = head_dim
        self.d_out = d_out
        self.W_key = nn.Linear(d_in, num_kv_groups * head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * head_dim, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_in, bias=False)

    def forward(self, x, mask, cos, sin):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        queries = apply_rope(queries, cos, sin)
        keys = keys.repeat_interleave(self.group_size, dim=1)
        values = values.repeat_interleave(self.group_size, dim=1)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores = attn_scores.masked_fill(mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)
        return self.out_proj(context)


def attention(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, cos, sin,
              num_heads, num_kv_heads, q_proj_bias=None, k_proj_bias=None, v_proj_bias=None):
    head_dim = cos.shape[-1]
    d_in, d_out = x.shape[-1], num_heads * head_dim
    bias = q_proj_bias is not None
    att = GroupedQueryAttention(d_in, d_out, num_heads, num_kv_heads, head_dim, bias)
    if bias:
        att.W_query.bias = nn.Parameter(q_proj_bias.clone())
        att.W_key.bias = nn.Parameter(k_proj_bias.clone())
        att.W_value.bias = nn.Parameter(v_proj_bias.clone())
    att.W_query.weight = nn.Parameter(q_proj_weight.clone())
    att.W_key.weight = nn.Parameter(k_proj_weight.clone())
    att.W_value.weight = nn.Parameter(v_proj_weight.clone())
    att.out_proj.weight = nn.Parameter(o_proj_weight.clone())
    n = x.shape[0]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return att(x.unsqueeze(0), mask, cos, sin)[0]
