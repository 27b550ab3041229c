"""Simplified self-attention as explicit Python loops.

This is how the Basic Self Attention notebook and the notebook on alignment
scores begin.

There are no trainable weights yet: each token's embedding serves as its own
query, key and value. Every score is one ``torch.dot``, so the loop yields a
sub-step per (query, key) pair; a reader can watch the matrix fill in.
"""

import torch

from tracer import Accumulate, Cost, Dot, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.mistakes import simplified_mistakes


def naive_loop(run: RunContext):
    inputs = run.inputs
    n = inputs.shape[0]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    scores = torch.zeros(n, n)
    for i in run.query_indices:
        for j in range(n):
            score = torch.dot(inputs[i], inputs[j])
            scores[i, j] = score
            yield substep(
                "scores",
                (i, j),
                formula=f"ω[{i},{j}] = x{i} · x{j}",
                axes={"query": ("feature",), "key": ("feature",), "score": ()},
                equation=Dot("query", "key", "score"),
                query=inputs[i],
                key=inputs[j],
                score=score,
            )
    yield stage(
        "scores",
        "Attention scores: the dot product of every pair",
        formula="ω[i,j] = x_i · x_j",
        axes=("query", "key"),
        scores=run.focus(scores),
    )

    sum_normalized = scores / scores.sum(dim=-1, keepdim=True)
    softmax = torch.softmax(scores, dim=-1)
    yield stage(
        "weights",
        "Attention weights: simple sum normalisation beside softmax",
        formula="α[i,j] = ω[i,j] / Σ_j ω[i,j]   vs   α[i,j] = exp(ω[i,j]) / Σ_j exp(ω[i,j])",
        axes=("query", "key"),
        weights=run.focus(softmax),
        sum_normalized=run.focus(sum_normalized),
    )

    context = torch.zeros_like(inputs)
    for i in run.query_indices:
        for j in range(n):
            before = context[i].clone()
            context[i] += softmax[i, j] * inputs[j]
            yield substep(
                "context",
                (i, j),
                formula=f"z{i} += α[{i},{j}] · x{j}",
                axes={
                    "weight": (),
                    "value": ("feature",),
                    "before": ("feature",),
                    "partial": ("feature",),
                },
                equation=Accumulate("before", "weight", "value", "partial"),
                weight=softmax[i, j],
                value=inputs[j],
                before=before,
                partial=context[i].clone(),
            )
    context = run.focus(context)
    yield stage(
        "context",
        "Context vectors: inputs weighted by attention",
        formula="z_i = Σ_j α[i,j] x_j",
        axes=("query", "feature"),
        context=context,
    )
    return context


def cost(sizes: Sizes) -> Cost:
    """One sub-step per (query, key) pair in each loop: following one query makes n."""
    n, e = sizes.tokens, sizes.d_in
    pairs = (1 if sizes.query is not None else n) * n
    return Cost(
        substeps=pairs,
        values=pairs * (5 * e + 2),
        elements=3 * n * n + 3 * n * e,
        table=max(n * n, n * e),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="naive-loop",
            title="Simplified self-attention, one dot product at a time",
            run=naive_loop,
            cost=cost,
            stages=("inputs", "scores", "weights", "context"),
            loops=("scores", "context"),
            uses_weights=False,
            mistakes=simplified_mistakes(),
        )
    )
