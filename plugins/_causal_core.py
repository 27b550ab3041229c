"""The core of causal attention, shared by ``masked``, ``multihead-wrapper`` and ``multihead``.

Given queries, keys and values it scores every pair, scales, hides the
future, takes the softmax and applies dropout (``tracer.dropout``, which every built-in
shares), yielding a stage at each point. The three variants reach it with ``yield from``, so its lines light
up in the source pane exactly as their own would: a plugin may spread its
code over as many files of its package as it likes.

With ``heads=True`` the tensors carry a leading head axis and every stage
is per head. When one query is focused (``--query``), everything is still
computed for all queries (each row is independent) and the stages show the
focused query's row.
"""

import torch

from tracer import RunContext, stage
from tracer.dropout import dropout


def causal_mask(run: RunContext, n: int) -> torch.Tensor:
    """True marks a (query, key) pair that must not be seen: a later key, or padding."""
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if run.padding is not None:
        mask = mask | torch.tensor(run.padding)
    return mask


def causal_attention(run: RunContext, queries, keys, values, *, heads=False, both_routes=False):
    """Yield ``scores`` .. ``dropout``; return the weights after dropout.

    ``queries``, ``keys``, ``values``: (tokens, width), or (heads, tokens, width).
    ``both_routes`` also shows the first route to causal weights: softmax, zero
    the future, renormalise (``masked`` teaches that the two agree).
    """
    n = keys.shape[-2]
    head = ("head",) if heads else ()
    per_head = ", per head" if heads else ""
    h = "_h" if heads else ""

    def show(tensor):  # the focused query's row of a (..., query, key) tensor
        return tensor if run.query is None else tensor[..., run.query, :]

    scores = queries @ keys.transpose(-2, -1)
    yield stage(
        "scores",
        f"Attention scores{per_head}",
        formula=f"ω{h} = Q{h} K{h}ᵀ",
        axes=(*head, "query", "key"),
        scores=show(scores),
    )
    d_k = keys.shape[-1]
    scaled = scores / d_k**0.5
    yield stage(
        "scaled",
        f"Scaled scores{per_head}",
        formula=f"ω{h} / √d_k,  d_k = {d_k}",
        axes=(*head, "query", "key"),
        scaled=show(scaled),
    )

    mask = causal_mask(run, n)
    yield stage(
        "mask",
        "Causal mask, the same for every head"
        if heads
        else "Causal mask (1 = hidden from the query)",
        formula="mask[i,j] = j > i",
        axes=("query", "key"),
        mask=run.focus(mask),
    )

    extra = {}
    if both_routes:
        softmax = torch.softmax(scaled, dim=-1)
        zeroed = softmax.masked_fill(mask, 0.0)
        row_sums = zeroed.sum(dim=-1, keepdim=True)
        renormalized = zeroed / row_sums.clamp_min(torch.finfo(zeroed.dtype).tiny)
        yield stage(
            "renormalized",
            "Route 1: softmax, zero the future, renormalise",
            formula="α = m ⊙ softmax(ω/√d_k) / Σ_j (m ⊙ softmax)",
            axes=(*head, "query", "key"),
            softmax=show(softmax),
            zeroed=show(zeroed),
            renormalized=show(renormalized),
        )

    masked_scores = scaled.masked_fill(mask, float("-inf"))
    yield stage(
        "masked_scores",
        "Route 2: -inf in the future before softmax"
        if both_routes
        else f"Future hidden with -inf{per_head}",
        formula=f"ω{h}[i,j] = -inf where j > i",
        axes=(*head, "query", "key"),
        masked_scores=show(masked_scores),
    )

    # A row with nothing left to attend to (all padding) gets zero weights, not NaN.
    weights = torch.softmax(masked_scores, dim=-1).nan_to_num(0.0)
    if both_routes:
        extra["difference"] = show(weights - renormalized)
    yield stage(
        "weights",
        "Attention weights (both routes agree)" if both_routes else f"Attention weights{per_head}",
        formula=f"α{h} = softmax(masked ω{h} / √d_k, dim=-1)",
        axes=(*head, "query", "key"),
        weights=show(weights),
        **extra,
    )

    dropped = dropout(weights, run.dropout, run.seed)
    yield stage(
        "dropout",
        f"Dropout on the weights (p = {run.dropout:g})",
        formula="kept weights × 1/(1-p); dropped ones become 0",
        axes=(*head, "query", "key"),
        weights=show(dropped),
    )
    return dropped
