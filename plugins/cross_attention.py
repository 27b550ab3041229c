"""Cross-attention: queries from one sequence, keys and values from another.

In the original Transformer the decoder attends to the encoder this way: each
token of the sequence being written (the target) asks its question of every
token of the sequence being read (the source). Nothing else changes from
scaled dot-product attention, only where the keys and values come from. So
the table of weights is target tokens × source tokens, and the two sequences
may differ in length and in width: W_query maps the target's width to d_out,
W_key and W_value map the source's width to the same d_out.

The second sequence is the ``source:`` section of an inputs file (with its own
tokens, embeddings and, optionally, key and value weights), or ``--source``.
With neither, ``source="required"`` has the tracer give the default source
(the built-in ``ton-voyage``: five tokens of width 4 beside the default inputs'
six of width 3), so the variant runs as it comes and the shapes differ.
Weights not given in the file are drawn after ``trainable``'s for the same
``--seed``, ``--init`` and ``--d-out``, so the queries are ``trainable``'s.

Two loops step through it: ``scores``, each target query against each source
key (one dot product), and ``weights``, each target token's row of weights
(a softmax over the source's tokens, labelled with them).
"""

import torch

from tracer import Cost, Dot, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError


def cross_attention(run: RunContext):
    if run.source is None:
        raise UsageError(
            "variant 'cross-attention' needs a second sequence: give an inputs file with a "
            "'source:' section, or --source NAME|FILE"
        )
    if run.dropout > 0:
        raise UsageError("variant 'cross-attention' has no dropout; leave --dropout at 0")
    inputs, W = run.inputs, run.weights
    source, W_source = run.source.inputs, run.source.weights
    yield stage(
        "inputs",
        "Target tokens: the queries come from these",
        axes=("token", "feature"),
        inputs=inputs,
    )
    yield stage(
        "source",
        "Source tokens: the keys and values come from these",
        axes=("source", "feature"),
        source=source,
    )

    queries = inputs @ W.query
    yield stage(
        "queries",
        "Queries, from the target",
        formula="Q = X W_q",
        axes=("query", "feature"),
        queries=run.focus(queries),
    )
    keys = source @ W_source.key
    yield stage(
        "keys", "Keys, from the source", formula="K = S W_k", axes=("key", "feature"), keys=keys
    )
    values = source @ W_source.value
    yield stage(
        "values",
        "Values, from the source",
        formula="V = S W_v",
        axes=("key", "feature"),
        values=values,
    )

    scores = queries @ keys.T
    # The loop a lesson steps through: each target query against each source key, one dot
    # product at a time (the sub-step shows the numbers the table below holds).
    for i in run.query_indices:
        for j in range(keys.shape[0]):
            yield substep(
                "scores",
                (i, j),
                formula=f"ω[{i},{j}] = q{i} · k{j}",
                axes={"query": ("feature",), "key": ("feature",), "score": ()},
                equation=Dot("query", "key", "score"),
                query=queries[i],
                key=keys[j],
                score=scores[i, j],
            )
    yield stage(
        "scores",
        "Scores: every target query against every source key",
        formula="ω = Q Kᵀ",
        axes=("query", "key"),
        scores=run.focus(scores),
    )
    d_k = keys.shape[-1]
    scaled = scores / d_k**0.5
    yield stage(
        "scaled",
        f"Scaled by √d_k = √{d_k}",
        formula="ω / √d_k",
        axes=("query", "key"),
        scaled=run.focus(scaled),
    )
    weights = torch.softmax(scaled, dim=-1)
    # A second loop: each target token's row of weights, a softmax over the source's tokens.
    for i in run.query_indices:
        yield substep(
            "weights",
            (i,),
            formula=f"α[{i}] = softmax(ω[{i}] / √{d_k}) over the source tokens",
            axes={"scaled": ("key",), "weights": ("key",)},
            scaled=scaled[i],
            weights=weights[i],
        )
    yield stage(
        "weights",
        "Attention weights: each target token's row over the source sums to 1",
        formula="α = softmax(ω / √d_k, dim=-1)",
        axes=("query", "key"),
        weights=run.focus(weights),
    )

    context = run.focus(weights @ values)
    yield stage(
        "context",
        "Context vectors: source values mixed for each target token",
        formula="Z = α V",
        axes=("query", "feature"),
        context=context,
    )
    return context


def cost(sizes: Sizes) -> Cost:
    """One sub-step per (query, source key) pair, then one per query's row of weights."""
    n, s, d = sizes.tokens, sizes.source_tokens, sizes.d_out
    queries = 1 if sizes.query is not None else n
    widths = sizes.d_in + sizes.d_source + 2 * d
    return Cost(
        substeps=queries * max(s, 1),
        values=queries * s * (2 * d + 4) + queries * (3 * s + 4),
        elements=4 * n * s + 4 * (n + s) * widths + 4 * widths * d,
        table=max(n * s, (n + s) * widths, widths * d),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="cross-attention",
            title="Cross-attention: target queries over source keys and values",
            description="Reads a second sequence: a 'source:' section in the inputs file, "
            "--source NAME|FILE, or else the built-in 'ton-voyage'.",
            run=cross_attention,
            cost=cost,
            source="required",
            loops=("scores", "weights"),
            stages=(
                "inputs",
                "source",
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
