"""Grouped-query attention: several query heads share one key/value head.

When a model generates text it keeps every earlier token's keys and values
(the KV cache), one set per head, and that cache is what fills the memory.
Grouped-query attention keeps fewer key/value heads than query heads: the
``heads`` query heads are split into ``kv_heads`` equal groups, and every
query head of a group reads the same keys and values. ``kv_heads = heads``
is ordinary multi-head attention; ``kv_heads = 1`` is multi-query attention,
where all query heads share one cache.

The weights are those of ``multihead`` for the same ``--seed``, ``--init`` and
``--d-out`` (the total width, divisible by ``heads``). To get one key and one
value projection per group from them, the group's heads are averaged, the way
the paper that introduced grouped-query attention turns a multi-head model
into a grouped one (mean pooling). With ``kv_heads = heads`` every group is a
single head, nothing is averaged, and the numbers are exactly ``multihead``'s.
"""

import torch
from tracer.builtin_plugins.multihead import split_weights

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage
from tracer.dropout import dropout
from tracer.errors import UsageError

HEADS = Option("heads", int, 2, "number of query heads (--heads N for short)", min=1, max=64)
KV_HEADS = Option(
    "kv_heads",
    int,
    1,
    "number of key/value heads; must divide heads (1 = multi-query)",
    min=1,
    max=64,
)


def grouped_query(run: RunContext):
    heads, kv_heads = run.options["heads"], run.options["kv_heads"]
    inputs = run.inputs
    n, d_out = inputs.shape[0], run.weights.query.shape[1]
    check_shapes(heads, kv_heads, d_out)
    group, head_dim = heads // kv_heads, d_out // heads
    rows = ("query",) if run.query is None else ()  # a focused query has no query axis
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    W_query, W_key, W_value, W_out, b_out = split_weights(run, d_out)
    if group > 1:
        # Columns h·head_dim .. (h+1)·head_dim belong to head h; average each group's heads.
        W_key = W_key.reshape(-1, kv_heads, group, head_dim).mean(dim=2).flatten(1)
        W_value = W_value.reshape(-1, kv_heads, group, head_dim).mean(dim=2).flatten(1)
    yield stage(
        "projections",
        f"Query projection for {heads} heads; key and value projections for {kv_heads}",
        formula="W_k, W_v of a group = the mean of its heads' columns",
        axes={
            "W_query": ("feature", "feature"),
            "W_key": ("feature", "feature"),
            "W_value": ("feature", "feature"),
            "W_out": ("feature", "feature"),
            "b_out": ("feature",),
        },
        W_query=W_query,
        W_key=W_key,
        W_value=W_value,
        W_out=W_out,
        b_out=b_out,
    )

    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    yield stage(
        "projected",
        f"Queries ({d_out} columns); keys and values ({kv_heads * head_dim} columns each)",
        formula="Q = X W_q,  K = X W_k,  V = X W_v",
        axes={
            "queries": (*rows, "feature"),
            "keys": ("key", "feature"),
            "values": ("key", "feature"),
        },
        queries=run.focus(queries),
        keys=keys,
        values=values,
    )

    # (tokens, columns) -> (tokens, heads, head_dim) -> (heads, tokens, head_dim)
    queries = queries.view(n, heads, head_dim).transpose(0, 1)
    keys = keys.view(n, kv_heads, head_dim).transpose(0, 1)
    values = values.view(n, kv_heads, head_dim).transpose(0, 1)
    yield stage(
        "split",
        f"{heads} query heads, {kv_heads} key/value heads, {head_dim} columns each",
        formula="view(tokens, heads, head_dim).transpose(0, 1)",
        axes={
            "queries": ("head", *rows, "feature"),
            "keys": ("kv_head", "key", "feature"),
            "values": ("kv_head", "key", "feature"),
        },
        queries=focus(run, queries),
        keys=keys,
        values=values,
    )

    # Query head h reads key/value head h // group: heads 0 .. group-1 share head 0, and so on.
    reads = torch.arange(heads).unsqueeze(1) // group == torch.arange(kv_heads).unsqueeze(0)
    yield stage(
        "groups",
        f"Which key/value head each query head reads ({group} per group): "
        f"the cache holds {2 * kv_heads * head_dim} numbers per token instead of "
        f"{2 * heads * head_dim}",
        formula=f"query head h reads key/value head h // {group}",
        axes=("head", "kv_head"),
        reads=reads,
    )

    keys = keys.repeat_interleave(group, dim=0)
    values = values.repeat_interleave(group, dim=0)
    scores = queries @ keys.transpose(1, 2)
    scaled = scores / head_dim**0.5
    yield stage(
        "scaled",
        "Scaled scores, per query head, against its group's keys",
        formula=f"ω_h = Q_h K_(h // {group})ᵀ / √head_dim,  head_dim = {head_dim}",
        axes=("head", *rows, "key"),
        scaled=focus(run, scaled),
    )

    # True marks a (query, key) pair that must not be seen: the key is in the future.
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if run.padding is not None:
        mask = mask | torch.tensor(run.padding)
    masked_scores = scaled.masked_fill(mask, float("-inf"))
    weights = torch.softmax(masked_scores, dim=-1).nan_to_num(0.0)
    yield stage(
        "weights",
        "Causal attention weights, per query head",
        formula="α_h = softmax(masked ω_h, dim=-1)",
        axes=("head", *rows, "key"),
        weights=focus(run, weights),
    )

    # The mask every built-in draws (numpy's RandomState(seed), public in tracer.dropout
    # for any plugin): with kv_heads = heads this drops exactly what multihead drops.
    dropped = dropout(weights, run.dropout, run.seed)
    yield stage(
        "dropout",
        f"Dropout on the weights (p = {run.dropout:g})",
        formula="kept weights × 1/(1-p); dropped ones become 0",
        axes=("head", *rows, "key"),
        weights=focus(run, dropped),
    )

    head_context = dropped @ values
    yield stage(
        "head_context",
        "Each query head's context vectors",
        formula=f"Z_h = α_h V_(h // {group})",
        axes=("head", *rows, "feature"),
        head_context=focus(run, head_context),
    )

    # (heads, tokens, head_dim) -> (tokens, heads, head_dim) -> (tokens, d_out)
    concat = head_context.transpose(0, 1).contiguous().view(n, d_out)
    context = run.focus(concat @ W_out + b_out)
    yield stage(
        "context",
        "Heads side by side, mixed by the output projection",
        formula="Z = concat W_o + b_o",
        axes=(*rows, "feature"),
        context=context,
    )
    return context


def check_shapes(heads: int, kv_heads: int, d_out: int) -> None:
    """Usage errors, before any work: the groups and the heads must come out equal."""
    if heads % kv_heads:
        divisors = ", ".join(str(d) for d in range(1, heads + 1) if heads % d == 0)
        raise UsageError(
            f"kv_heads {kv_heads} does not divide heads {heads}: every key/value head serves "
            f"the same number of query heads (kv_heads may be {divisors})"
        )
    if d_out % heads:
        raise UsageError(
            f"d_out {d_out} is not divisible by heads {heads}: grouped-query splits the "
            f"projections' {d_out} columns into {heads} equal heads (set --d-out or --heads)"
        )


def focus(run: RunContext, per_head: torch.Tensor) -> torch.Tensor:
    """Row ``query`` of each head when a query is focused: (heads, tokens, ...) -> (heads, ...)."""
    return per_head if run.query is None else per_head[:, run.query]


# Mistakes learners make here, as changes to the computation above (attn check names one
# when it reproduces their numbers).
def grouped(run: RunContext, *, tiled: bool = False, scale: float | None = None):
    """The variant's tensors, with the key/value heads tiled (``repeat``) or a scale changed."""
    heads, kv_heads = run.options["heads"], run.options["kv_heads"]
    inputs = run.inputs
    n, d_out = inputs.shape[0], run.weights.query.shape[1]
    group, head_dim = heads // kv_heads, d_out // heads
    W_query, W_key, W_value, W_out, b_out = split_weights(run, d_out)
    if group > 1:
        W_key = W_key.reshape(-1, kv_heads, group, head_dim).mean(dim=2).flatten(1)
        W_value = W_value.reshape(-1, kv_heads, group, head_dim).mean(dim=2).flatten(1)
    queries = (inputs @ W_query).view(n, heads, head_dim).transpose(0, 1)
    keys = (inputs @ W_key).view(n, kv_heads, head_dim).transpose(0, 1)
    values = (inputs @ W_value).view(n, kv_heads, head_dim).transpose(0, 1)
    if tiled:  # heads 0, 1, 2, 3 read key/value heads 0, 1, 0, 1 instead of 0, 0, 1, 1
        keys, values = keys.repeat(group, 1, 1), values.repeat(group, 1, 1)
    else:
        keys = keys.repeat_interleave(group, dim=0)
        values = values.repeat_interleave(group, dim=0)
    scaled = queries @ keys.transpose(1, 2) * (head_dim**-0.5 if scale is None else scale)
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scaled.masked_fill(mask, float("-inf")), dim=-1)
    head_context = weights @ values
    concat = head_context.transpose(0, 1).contiguous().view(n, d_out)
    made = {
        "scaled": scaled,
        "weights": weights,
        "head_context": head_context,
        "context": concat @ W_out + b_out,
    }
    if tiled:  # the tiled heads themselves are where this mistake first shows
        made.update(repeated_keys=keys, repeated_values=values)
    return made


def _head_dim(run: RunContext) -> int:
    return run.weights.query.shape[1] // run.options["heads"]


MISTAKES = (
    Mistake(
        "heads-tiled",
        "key/value heads tiled (repeat) instead of interleaved (repeat_interleave)",
        "query heads h·group .. h·group + group - 1 share key/value head h: use "
        "`keys.repeat_interleave(group, dim=0)`; `repeat` pairs head h with h % kv_heads.",
        lambda run: grouped(run, tiled=True),
        ops=("repeat", "expand", "tile"),
    ),
    Mistake(
        "scaling",
        "dividing the scores by head_dim instead of √head_dim",
        "divide by the square root of the head width: `/ head_dim ** 0.5`.",
        lambda run: grouped(run, scale=1 / _head_dim(run)),
    ),
    Mistake(
        "scaling",
        "scores not scaled",
        "divide each head's scores by √head_dim before the softmax.",
        lambda run: grouped(run, scale=1.0),
    ),
    Mistake(
        "scaling",
        "scaling by the model width instead of the head width",
        "√d_k is the square root of one head's width (head_dim), not of d_out.",
        lambda run: grouped(run, scale=run.weights.query.shape[1] ** -0.5),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """Scores, scaled scores and weights per query head, tokens x tokens each."""
    n, d, e, heads = sizes.tokens, sizes.d_out, sizes.d_in, sizes.options["heads"]
    return Cost(
        elements=4 * heads * n * n + 4 * n * (e + 2 * d + heads * d) + 4 * e * d + 4 * heads * d,
        table=max(heads * n * n, n * (e + heads * d), e * heads * d),
        smaller=("heads",),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="grouped-query",
            title="Grouped-query attention: query heads share key/value heads",
            description="--heads N query heads (default 2) share -o kv_heads=M key/value heads "
            "(default 1, multi-query); --d-out is the total width.",
            options=(HEADS, KV_HEADS),
            run=grouped_query,
            cost=cost,
            mistakes=MISTAKES,
            stages=(
                "inputs",
                "projections",
                "projected",
                "split",
                "groups",
                "scaled",
                "weights",
                "dropout",
                "head_context",
                "context",
            ),
        )
    )
