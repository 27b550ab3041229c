"""The book's MultiHeadAttention, loaded with one GPT-2 layer's weights as its next chapter
loads them (``load_weights_into_gpt``): c_attn split into W_query, W_key and W_value, each
transposed from Conv1D's (in, out) layout into nn.Linear's (out, in)."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


def assign(left, right):
    if left.shape != right.shape:
        raise ValueError(f"Shape mismatch. Left: {left.shape}, Right: {right.shape}")
    return nn.Parameter(torch.as_tensor(right).clone())


def attention(x, c_attn_weight, c_attn_bias, c_proj_weight, c_proj_bias, num_heads):
    d_model = x.shape[-1]
    att = MultiHeadAttention(d_model, d_model, x.shape[-2], 0.0, num_heads, qkv_bias=True)
    q_w, k_w, v_w = torch.split(c_attn_weight, d_model, dim=-1)
    att.W_query.weight = assign(att.W_query.weight, q_w.T)
    att.W_key.weight = assign(att.W_key.weight, k_w.T)
    att.W_value.weight = assign(att.W_value.weight, v_w.T)
    q_b, k_b, v_b = torch.split(c_attn_bias, d_model, dim=-1)
    att.W_query.bias = assign(att.W_query.bias, q_b)
    att.W_key.bias = assign(att.W_key.bias, k_b)
    att.W_value.bias = assign(att.W_value.bias, v_b)
    att.out_proj.weight = assign(att.out_proj.weight, c_proj_weight.T)
    att.out_proj.bias = assign(att.out_proj.bias, c_proj_bias)
    return att(x.unsqueeze(0))[0]
