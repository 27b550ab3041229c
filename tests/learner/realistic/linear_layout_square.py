import torch


def attention(inputs, W_query, W_key, W_value):
    # Written for nn.Linear weights, which are stored (d_out, d_in) and applied as x @ W.T
    queries = inputs @ W_query.T
    keys = inputs @ W_key.T
    values = inputs @ W_value.T
    scores = queries @ keys.T / keys.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ values


# expect: --against trainable --d-out 3 -> weights-layout at 6
