"""Returns a dict; the context is a mean of the weighted values instead of their sum."""

import torch


def attention(inputs, W_query, W_key, W_value):
    queries = torch.einsum("td,de->te", inputs, W_query)
    keys = torch.einsum("td,de->te", inputs, W_key)
    values = torch.einsum("td,de->te", inputs, W_value)
    scores = torch.einsum("qe,ke->qk", queries, keys) / keys.shape[-1] ** 0.5
    weights = torch.softmax(scores, dim=-1)
    context = (weights[:, :, None] * values[None, :, :]).mean(dim=1)
    return {"attn": weights, "context": context}


# expect: --against trainable -> scaled-by at 12
