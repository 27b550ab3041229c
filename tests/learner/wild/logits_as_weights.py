"""The scaled logits are used in place of the softmax weights."""

import torch


def attention(inputs, W_query, W_key, W_value):
    q = torch.einsum("nd,de->ne", inputs, W_query)
    k = torch.einsum("nd,de->ne", inputs, W_key)
    v = torch.einsum("nd,de->ne", inputs, W_value)
    logits = torch.einsum("qe,ke->qk", q, k) / k.shape[-1] ** 0.5
    weights = torch.softmax(logits, dim=-1)
    return torch.einsum("qk,ke->qe", logits, v)


# expect: --against trainable -> wrong-factor at 12
