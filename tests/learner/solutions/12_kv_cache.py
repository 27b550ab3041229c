import torch


def attention(inputs, W_query, W_key, W_value):
    d_out = W_key.shape[1]
    keys = torch.zeros(0, d_out)
    values = torch.zeros(0, d_out)
    rows = []
    for x in inputs:
        query = x @ W_query
        keys = torch.cat([keys, (x @ W_key).unsqueeze(0)])
        values = torch.cat([values, (x @ W_value).unsqueeze(0)])
        weights = torch.softmax(keys @ query / d_out**0.5, dim=-1)
        rows.append(weights @ values)
    return torch.stack(rows)
