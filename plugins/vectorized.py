"""Simplified self-attention as matrix products: the naive loop, vectorised.

``inputs @ inputs.T`` computes every pairwise dot product at once: the
loop's numbers up to float rounding (a few differ in the last bit), as the
Basic Self Attention notebook shows.
"""

import torch

from tracer import Cost, RunContext, Sizes, Variant, hookimpl, stage
from tracer.mistakes import simplified_mistakes


def vectorized(run: RunContext):
    inputs = run.inputs
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    queries = run.focus(inputs)
    scores = queries @ inputs.T
    yield stage(
        "scores",
        "Attention scores in one matrix product",
        formula="ω = X Xᵀ",
        axes=("query", "key"),
        scores=scores,
    )

    weights = torch.softmax(scores, dim=-1)
    yield stage(
        "weights",
        "Attention weights: softmax over each row",
        formula="α = softmax(ω, dim=-1)",
        axes=("query", "key"),
        weights=weights,
    )

    context = weights @ inputs
    yield stage(
        "context", "Context vectors", formula="Z = α X", axes=("query", "feature"), context=context
    )
    return context


def cost(sizes: Sizes) -> Cost:
    """Scores and weights, tokens x tokens each: the run's tables, declared before it starts."""
    n = sizes.tokens
    return Cost(elements=2 * n * n + 3 * n * sizes.d_in, table=max(n * n, n * sizes.d_in))


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="vectorized",
            title="Simplified self-attention as matrix products",
            run=vectorized,
            cost=cost,
            stages=("inputs", "scores", "weights", "context"),
            uses_weights=False,
            mistakes=simplified_mistakes(),
        )
    )
