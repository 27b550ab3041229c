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

The ``masked_scores`` loop steps through each query's window only, one dot
product at a time: the keys outside the band are never computed.
"""

import torch

from tracer import Cost, Dot, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.dropout import dropout
from tracer.mistakes import attend, common_mistakes

WINDOW = Option(
    "window",
    int,
    3,
    "how many keys each query sees: itself and the ones before",
    min=1,
    max=16_384,
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
    # The loop a lesson steps through: each query against the keys in its window only (the
    # band's other keys are never computed: that is the saving), one dot product at a time.
    d_k = keys.shape[-1]
    for i in run.query_indices:
        query = queries if run.query is not None else queries[i]
        for j in range(max(0, i - window + 1), i + 1):
            dot = torch.dot(query, keys[j])
            yield substep(
                "masked_scores",
                (i, j),
                formula=f"ω[{i},{j}] = q{i} · k{j} / √{d_k}   (key {j} is in query {i}'s window)",
                axes={"query": ("feature",), "key": ("feature",), "dot": (), "scaled": ()},
                equation=Dot("query", "key", "dot"),
                query=query,
                key=keys[j],
                dot=dot,
                scaled=dot / d_k**0.5,
            )
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

    # The mask every built-in draws (numpy's RandomState(seed), public in tracer.dropout
    # for any plugin): with a window as long as the text this drops exactly what masked drops.
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


# Mistakes learners make here, as changes to the band (attn check names one when it
# reproduces their numbers).
def band(run: RunContext, window: int, *, causal: bool = True, symmetric: bool = False):
    """True where query i may not see key j, for a window of ``window`` keys."""
    n = run.inputs.shape[0]
    i, j = torch.arange(n).unsqueeze(1), torch.arange(n).unsqueeze(0)
    if symmetric:
        return (i - j).abs() >= window
    hidden = j <= i - window
    return hidden | (j > i) if causal else hidden


MASK_OPS = ("masked_fill", "masked_fill_", "where", "__setitem__")

MISTAKES = (
    *common_mistakes(lambda run: band(run, run.options["window"])),
    Mistake(
        "window-off-by-one",
        "a window one key too wide",
        "query i sees keys i - window + 1 .. i: hide j <= i - window (not j < i - window).",
        lambda run: attend(run, band(run, run.options["window"] + 1)),
        ops=MASK_OPS,
    ),
    Mistake(
        "window-off-by-one",
        "a window one key too narrow",
        "query i sees keys i - window + 1 .. i, itself included: hide j <= i - window "
        "(not j <= i - window + 1).",
        lambda run: attend(run, band(run, run.options["window"] - 1)),
        ops=MASK_OPS,
    ),
    Mistake(
        "window-symmetric",
        "a band that also looks ahead",
        "the window reaches back only: hide later keys too (j > i), not just |i - j| >= window.",
        lambda run: attend(run, band(run, run.options["window"], symmetric=True)),
        ops=MASK_OPS,
    ),
    Mistake(
        "window-not-causal",
        "a band without the causal mask",
        "hide later keys as well as old ones: `(j > i) | (j <= i - window)`.",
        lambda run: attend(run, band(run, run.options["window"], causal=False)),
        ops=MASK_OPS,
    ),
    Mistake(
        "mask-unused",
        "no band applied",
        "hide the keys outside the window before the softmax: "
        "`scores.masked_fill((j > i) | (j <= i - window), -torch.inf)`.",
        lambda run: attend(run, None),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """One sub-step per (query, key in its window), and about ten tokens x tokens tables."""
    n, d, window = sizes.tokens, sizes.d_out, min(sizes.options["window"], sizes.tokens)
    pairs = (1 if sizes.query is not None else n) * window
    widths = sizes.d_in + d
    return Cost(
        substeps=pairs,
        values=pairs * (2 * d + 2),
        elements=10 * n * n + 4 * n * widths + 3 * sizes.d_in * d,
        table=max(n * n, n * widths, sizes.d_in * d),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="sliding-window",
            title="Sliding-window attention: each query sees only the last few keys",
            description="-o window=N: query i sees keys i-N+1 .. i (default 3).",
            options=(WINDOW,),
            run=sliding_window,
            cost=cost,
            mistakes=MISTAKES,
            loops=("masked_scores",),
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
