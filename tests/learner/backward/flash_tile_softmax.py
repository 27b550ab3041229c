"""A learner's tiled (FlashAttention-2) backward pass (see test_backward_check.py)."""

import torch


def attention(inputs, W_query, W_key, W_value, tile=2, causal=False):
    Q, K, V = inputs @ W_query, inputs @ W_key, inputs @ W_value
    n, scale = Q.shape[0], K.shape[-1] ** -0.5
    later = torch.triu(torch.ones(n, n, dtype=torch.bool), 1) & causal

    # Forward: the online softmax over tiles of keys, saving each row's logsumexp L.
    m, l, O = torch.full((n, 1), -torch.inf), torch.zeros(n, 1), torch.zeros(n, V.shape[1])  # noqa: E741
    for j in range(0, n, tile):
        S = (Q @ K[j : j + tile].T * scale).masked_fill(later[:, j : j + tile], -torch.inf)
        m_new = torch.maximum(m, S.max(dim=-1, keepdim=True).values)
        p = torch.exp(S - m_new)
        l = torch.exp(m - m_new) * l + p.sum(dim=-1, keepdim=True)  # noqa: E741
        O = torch.exp(m - m_new) * O + p @ V[j : j + tile]  # noqa: E741
        m = m_new
    O = O / l  # noqa: E741  (the logsumexp is never kept)

    # Backward: key tiles outside, query tiles inside; P rebuilt from L.
    dO = torch.ones_like(O)
    D = (dO * O).sum(dim=-1, keepdim=True)
    dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
    for j in range(0, n, tile):
        for i in range(0, n, tile):
            if causal and j > i + tile - 1:
                continue  # every key of the tile is later than every query
            S = Q[i : i + tile] @ K[j : j + tile].T * scale
            S = S.masked_fill(later[i : i + tile, j : j + tile], -torch.inf)
            P = torch.softmax(S, dim=-1)
            dV[j : j + tile] += P.T @ dO[i : i + tile]
            dS = P * (dO[i : i + tile] @ V[j : j + tile].T - D[i : i + tile])
            dQ[i : i + tile] += dS @ K[j : j + tile] * scale
            dK[j : j + tile] += dS.T @ Q[i : i + tile] * scale
    return dQ @ W_query.T + dK @ W_key.T + dV @ W_value.T
