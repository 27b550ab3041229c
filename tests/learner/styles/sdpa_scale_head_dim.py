"""F.scaled_dot_product_attention given a scale of 1/d_k instead of 1/√d_k."""

import torch.nn.functional as F


def attention(inputs, W_query, W_key, W_value):
    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / k.shape[-1])


# expect: --against masked --d-out 4 -> scaling at 8
