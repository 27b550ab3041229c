import torch


def attention(inputs, W_query, W_key, W_value):
    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    attn_scores = queries @ keys.T
    d_k = keys.shape[-1]
    attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
    context_vec = attn_weights @ keys
    return context_vec


# expect: --against trainable -> keys-as-values at 11
