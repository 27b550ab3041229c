import torch


def attention(inputs, W_query, W_key, W_value, tile=2):
    queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n = queries.shape[0]
    m = torch.full((n, 1), -torch.inf)
    l = torch.zeros(n, 1)  # noqa: E741  (the names FlashAttention gives them)
    O = torch.zeros(n, values.shape[1])  # noqa: E741
    for start in range(0, keys.shape[0], tile):
        scores = queries @ keys[start : start + tile].T / keys.shape[1] ** 0.5
        m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)
        rescale = torch.exp(m - m_new)
        p = torch.exp(scores - m_new)
        l = rescale * l + p.sum(dim=-1, keepdim=True)  # noqa: E741
        O = rescale * O + p @ values[start : start + tile]  # noqa: E741
        m = m_new
    return O / l
