"""Causal (masked) self-attention: a token may only attend to itself and earlier tokens.

It takes both routes the course material discusses and shows that they agree:
1. softmax first, zero the future, then renormalise each row to sum to 1;
2. fill the future with -inf before the softmax, so it gets exactly zero weight.
Padding tokens (from an inputs file) are masked as keys too. A row with
nothing left to attend to gets zero weights rather than NaN.
"""

from tracer.builtin_plugins._causal_core import causal_attention

from tracer import Cost, RunContext, Sizes, Variant, hookimpl, stage
from tracer.mistakes import causal_mistakes


def masked(run: RunContext):
    inputs, W = run.inputs, run.weights
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    queries = inputs @ W.query
    yield stage(
        "queries",
        "Queries",
        formula="Q = X W_q",
        axes=("query", "feature"),
        queries=run.focus(queries),
    )
    keys = inputs @ W.key
    yield stage("keys", "Keys", formula="K = X W_k", axes=("key", "feature"), keys=keys)
    values = inputs @ W.value
    yield stage("values", "Values", formula="V = X W_v", axes=("key", "feature"), values=values)

    # Scores, scaling, the causal mask, softmax and dropout: the core the
    # multi-head variants share, in _causal_core.py beside this file.
    weights = yield from causal_attention(run, queries, keys, values, both_routes=True)

    context = run.focus(weights @ values)
    yield stage(
        "context", "Context vectors", formula="Z = α V", axes=("query", "feature"), context=context
    )
    return context


def cost(sizes: Sizes) -> Cost:
    """About ten tokens x tokens tables (scores, mask, weights...), declared before it starts."""
    n, widths = sizes.tokens, sizes.d_in + sizes.d_out
    return Cost(
        elements=10 * n * n + 4 * n * widths + 3 * sizes.d_in * sizes.d_out,
        table=max(n * n, n * widths, sizes.d_in * sizes.d_out),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="masked",
            title="Causal self-attention: no peeking at later tokens",
            run=masked,
            cost=cost,
            mistakes=causal_mistakes(),
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
