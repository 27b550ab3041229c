"""Sliding-window attention: causal attention that only looks a fixed distance back.

Causal attention lets token i see every key j <= i, so the work and the memory
for one query grow with the length of the text. A sliding window keeps only
the most recent ``window`` keys: query i sees key j when

    i - window < j <= i

so every query sees at most ``window`` keys, however long the text is. Models
such as Mistral stack layers of this; information from further back still
arrives, one window per layer.

The weights are those of ``trainable`` and ``masked`` for the same ``--seed``,
``--init`` and ``--d-out``. With a window at least as long as the text, the
band hides nothing the causal mask did not, and the output equals ``masked``'s.
"""

import torch
from tracer.builtin_plugins._dropout import dropout

from tracer import Option, RunContext, Variant, hookimpl, stage

WINDOW = Option(
    "window", int, 3, "how many keys each query sees: itself and the ones before", min=1
)


def sliding_window(run: RunContext):
    inputs, W = run.inputs, run.weights
    window = run.options["window"]
    n = inputs.shape[0]
    rows = ("query",) if run.query is None else ()  # a focused query has no query axis
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    queries = run.focus(inputs) @ W.query
    keys = inputs @ W.key
    values = inputs @ W.value
    yield stage(
        "projected",
        "Queries, keys and values",
        formula="Q = X W_q,  K = X W_k,  V = X W_v",
        axes={
            "queries": (*rows, "feature"),
            "keys": ("key", "feature"),
            "values": ("key", "feature"),
        },
        queries=queries,
        keys=keys,
        values=values,
    )

    scaled = queries @ keys.T / keys.shape[-1] ** 0.5
    yield stage(
        "scaled",
        "Scaled attention scores",
        formula="ω / √d_k,  ω = Q Kᵀ",
        axes=(*rows, "key"),
        scaled=scaled,
    )

    # True marks a (query, key) pair that must not be seen.
    i = torch.arange(n).unsqueeze(1)  # query positions, as a column
    j = torch.arange(n).unsqueeze(0)  # key positions, as a row
    causal = j > i
    too_old = j <= i - window
    yield stage(
        "mask",
        f"The causal mask, and the band of the last {window} keys (1 = hidden)",
        formula=f"causal: j > i     band: j > i  or  j <= i - {window}",
        axes=(*rows, "key"),
        causal=run.focus(causal),
        band=run.focus(causal | too_old),
    )

    mask = causal | too_old
    if run.padding is not None:
        mask = mask | torch.tensor(run.padding)
    mask = run.focus(mask)
    masked_scores = scaled.masked_fill(mask, float("-inf"))
    yield stage(
        "masked_scores",
        "Scores outside the window set to -inf",
        formula=f"ω[i,j] = -inf unless i - {window} < j <= i",
        axes=(*rows, "key"),
        masked_scores=masked_scores,
    )

    # A row with nothing left to see (only padding in its window) gets zero weights, not NaN.
    weights = torch.softmax(masked_scores, dim=-1).nan_to_num(0.0)
    yield stage(
        "weights",
        "Attention weights: each query shares its attention among its window",
        formula="α = softmax(masked ω / √d_k, dim=-1)",
        axes={"weights": (*rows, "key"), "keys_seen": rows},
        weights=weights,
        keys_seen=(~mask).sum(dim=-1),
    )

    # The mask every built-in draws (numpy's RandomState(seed), in _dropout.py beside this
    # file): with a window as long as the text this drops exactly what masked drops.
    dropped = dropout(weights, run.dropout, run.seed, query=run.query)
    yield stage(
        "dropout",
        f"Dropout on the weights (p = {run.dropout:g})",
        formula="kept weights × 1/(1-p); dropped ones become 0",
        axes=(*rows, "key"),
        weights=dropped,
    )

    context = dropped @ values
    yield stage(
        "context",
        "Context vectors",
        formula="Z = α V",
        axes=(*rows, "feature"),
        context=context,
    )
    return context


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="sliding-window",
            title="Sliding-window attention: each query sees only the last few keys",
            description="-o window=N: query i sees keys i-N+1 .. i (default 3).",
            options=(WINDOW,),
            run=sliding_window,
            stages=(
                "inputs",
                "projected",
                "scaled",
                "mask",
                "masked_scores",
                "weights",
                "dropout",
                "context",
            ),
        )
    )
