"""Causal (masked) self-attention: a token may only attend to itself and earlier tokens.

It takes both routes the course material discusses and shows that they agree:
1. softmax first, zero the future, then renormalise each row to sum to 1;
2. fill the future with -inf before the softmax, so it gets exactly zero weight.
Padding tokens (from an inputs file) are masked as keys too. A row with
nothing left to attend to gets zero weights rather than NaN.
"""

import torch

from tracer import RunContext, Variant, hookimpl, stage


def masked(run: RunContext):
    inputs, W = run.inputs, run.weights
    n = inputs.shape[0]
    yield stage("inputs", "Token embeddings", inputs=inputs)

    queries = run.focus(inputs) @ W.query
    yield stage("queries", "Queries", formula="Q = X W_q", queries=queries)
    keys = inputs @ W.key
    yield stage("keys", "Keys", formula="K = X W_k", keys=keys)
    values = inputs @ W.value
    yield stage("values", "Values", formula="V = X W_v", values=values)

    scores = queries @ keys.T
    yield stage("scores", "Attention scores", formula="ω = Q Kᵀ", scores=scores)
    scaled = scores / keys.shape[-1] ** 0.5
    yield stage("scaled", "Scaled scores", formula="ω / √d_k", scaled=scaled)

    # True marks a (query, key) pair that must not be seen: the key is in the future.
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if run.padding is not None:
        mask = mask | torch.tensor(run.padding)
    mask = run.focus(mask)
    yield stage(
        "mask", "Causal mask (1 = hidden from the query)", formula="mask[i,j] = j > i", mask=mask
    )

    softmax = torch.softmax(scaled, dim=-1)
    zeroed = softmax.masked_fill(mask, 0.0)
    row_sums = zeroed.sum(dim=-1, keepdim=True)
    renormalized = zeroed / row_sums.clamp_min(torch.finfo(zeroed.dtype).tiny)
    yield stage(
        "renormalized",
        "Route 1: softmax, zero the future, renormalise",
        formula="α = m ⊙ softmax(ω/√d_k) / Σ_j (m ⊙ softmax)",
        softmax=softmax,
        zeroed=zeroed,
        renormalized=renormalized,
    )

    masked_scores = scaled.masked_fill(mask, float("-inf"))
    yield stage(
        "masked_scores",
        "Route 2: -inf in the future before softmax",
        formula="ω[i,j] = -inf where j > i",
        masked_scores=masked_scores,
    )

    weights = torch.softmax(masked_scores, dim=-1).nan_to_num(0.0)
    yield stage(
        "weights",
        "Attention weights (both routes agree)",
        formula="α = softmax(masked ω / √d_k, dim=-1)",
        weights=weights,
        difference=weights - renormalized,
    )

    dropped = weights
    if run.dropout > 0:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(run.seed)
            dropped = torch.nn.functional.dropout(weights, p=run.dropout)
    yield stage(
        "dropout",
        f"Dropout on the weights (p = {run.dropout:g})",
        formula="kept weights × 1/(1-p); dropped ones become 0",
        weights=dropped,
    )

    context = dropped @ values
    yield stage("context", "Context vectors", formula="Z = α V", context=context)
    return context


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="masked",
            title="Causal self-attention: no peeking at later tokens",
            run=masked,
            stages=(
                "inputs",
                "queries",
                "keys",
                "values",
                "scores",
                "scaled",
                "mask",
                "renormalized",
                "masked_scores",
                "weights",
                "dropout",
                "context",
            ),
        )
    )
