"""Scaled dot-product attention with trainable query, key and value weights.

As in the trainable-weights notebook and the post on trainable weights: three
projection matrices turn each embedding into a query, a key and a value; scores
are scaled by √d_k before the softmax so that they do not grow with the key
width and push the softmax into saturation.
"""

import torch

from tracer import Cost, RunContext, Sizes, Variant, hookimpl, stage
from tracer.mistakes import common_mistakes, nothing


def trainable(run: RunContext):
    inputs, W = run.inputs, run.weights
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)
    yield stage(
        "projections",
        "Projection matrices (trainable)",
        axes=("feature", "feature"),
        W_query=W.query,
        W_key=W.key,
        W_value=W.value,
    )

    queries = run.focus(inputs) @ W.query
    yield stage(
        "queries",
        "Queries: what each token is looking for",
        formula="Q = X W_q",
        axes=("query", "feature"),
        queries=queries,
    )
    keys = inputs @ W.key
    yield stage(
        "keys",
        "Keys: what each token offers to be matched on",
        formula="K = X W_k",
        axes=("key", "feature"),
        keys=keys,
    )
    values = inputs @ W.value
    yield stage(
        "values",
        "Values: what each token passes on",
        formula="V = X W_v",
        axes=("key", "feature"),
        values=values,
    )

    scores = queries @ keys.T
    yield stage(
        "scores", "Attention scores", formula="ω = Q Kᵀ", axes=("query", "key"), scores=scores
    )

    d_k = keys.shape[-1]
    scaled = scores / d_k**0.5
    yield stage(
        "scaled",
        "Scaled scores",
        formula=f"ω / √d_k,  d_k = {d_k}",
        axes=("query", "key"),
        scaled=scaled,
    )

    weights = torch.softmax(scaled, dim=-1)
    yield stage(
        "weights",
        "Attention weights",
        formula="α = softmax(ω / √d_k, dim=-1)",
        axes=("query", "key"),
        weights=weights,
    )

    context = weights @ values
    yield stage(
        "context", "Context vectors", formula="Z = α V", axes=("query", "feature"), context=context
    )
    return context


def cost(sizes: Sizes) -> Cost:
    """Scores, scaled scores and weights, tokens x tokens each, declared before it starts."""
    n, widths = sizes.tokens, sizes.d_in + sizes.d_out
    return Cost(
        elements=3 * n * n + 4 * n * widths + 3 * sizes.d_in * sizes.d_out,
        table=max(n * n, n * widths, sizes.d_in * sizes.d_out),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="trainable",
            title="Scaled dot-product attention with trainable weights",
            run=trainable,
            cost=cost,
            mistakes=common_mistakes(nothing),
            stages=(
                "inputs",
                "projections",
                "queries",
                "keys",
                "values",
                "scores",
                "scaled",
                "weights",
                "context",
            ),
        )
    )
