"""Online softmax: attention computed one tile of keys at a time (the FlashAttention recurrence).

Ordinary attention builds the whole tokens x tokens table of scores before its
softmax, and at 8,192 tokens that table alone is 256 MiB. The softmax of a row
only needs two numbers besides the scores themselves: the row's maximum (so
that exp never overflows) and the sum of exp(score - maximum). Both can be
kept *running* while the keys arrive a few at a time. For each tile of keys:

    m_new   = max(m, max of the tile's scores)          running maximum
    rescale = exp(m - m_new)                            how much the old maximum was off
    p       = exp(tile scores - m_new)
    l       = rescale · l + Σ p                          running sum of exp(score - m)
    O       = rescale · O + p V_tile                     running weighted sum of values

and after the last tile the context is O / l. Nothing here is an
approximation: when the maximum grows, ``rescale`` corrects everything
summed so far, so the result equals ``trainable`` (or ``masked`` with
``causal=true``) up to float rounding (the sums are taken in another order), and
m and l end as the row maximum and the row sum of exp(score - maximum). Only a tokens x ``tile`` table of scores ever exists.

The weights are those of ``trainable`` for the same ``--seed``, ``--init`` and
``--d-out``.
"""

import torch

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError
from tracer.mistakes import common_mistakes

TILE = Option("tile", int, 2, "keys per tile", min=1, max=16_384)
CAUSAL = Option("causal", bool, False, "hide later keys from each query, as masked does")


def online_softmax(run: RunContext):
    inputs, W = run.inputs, run.weights
    tile, causal = run.options["tile"], run.options["causal"]
    if run.dropout > 0:
        raise UsageError(
            "variant 'online-softmax' has no dropout (it never holds the weights to drop); "
            "leave --dropout at 0"
        )
    n = inputs.shape[0]
    first = run.query_indices.start  # the first query computed: 0, or the focused one
    q_axis = f"query:{first}"  # with a focused query, one row that starts at that token
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    queries = inputs[run.query_indices] @ W.query
    keys = inputs @ W.key
    values = inputs @ W.value
    yield stage(
        "projected",
        "Queries, keys and values",
        formula="Q = X W_q,  K = X W_k,  V = X W_v",
        axes={
            "queries": (q_axis, "feature"),
            "keys": ("key", "feature"),
            "values": ("key", "feature"),
        },
        queries=queries,
        keys=keys,
        values=values,
    )

    rows = torch.arange(first, first + queries.shape[0]).unsqueeze(1)  # query positions
    hidden = torch.zeros(n, dtype=torch.bool)  # padding tokens are never attended to
    if run.padding is not None:
        hidden = torch.tensor(run.padding)
    d_k = keys.shape[-1]
    m = torch.full((queries.shape[0],), float("-inf"))  # running maximum of each row
    # m, l and O are the names the FlashAttention paper gives them.
    l = torch.zeros(queries.shape[0])  # running sum of exp(score - m)
    O = torch.zeros(queries.shape[0], values.shape[-1])  # running Σ exp(score - m) v
    for index, start in enumerate(range(0, n, tile)):
        stop = min(start + tile, n)
        k_tile, v_tile = keys[start:stop], values[start:stop]
        scaled = queries @ k_tile.T / d_k**0.5
        columns = torch.arange(start, stop).unsqueeze(0)  # key positions of this tile
        hide = hidden[start:stop].expand(len(rows), -1)
        if causal:
            hide = hide | (columns > rows)
        scaled = scaled.masked_fill(hide, float("-inf"))

        m_old = m
        m = torch.maximum(m_old, scaled.max(dim=-1).values)
        # A row that has seen no visible key yet still has m = -inf; shift it by 0 instead,
        # so that exp never meets -inf - (-inf).
        shift = torch.where(m == float("-inf"), 0.0, m)
        rescale = torch.exp(m_old - shift)
        p = torch.exp(scaled - shift.unsqueeze(1))
        l = rescale * l + p.sum(dim=-1)
        O = rescale.unsqueeze(1) * O + p @ v_tile
        yield substep(
            "tiles",
            (index,),
            formula=f"tile {index}: keys {start} .. {stop - 1}",
            axes={
                "keys": (f"key:{start}", "feature"),
                "values": (f"key:{start}", "feature"),
                "scaled": (q_axis, f"key:{start}"),
                "m_old": (q_axis,),
                "m": (q_axis,),
                "rescale": (q_axis,),
                "p": (q_axis, f"key:{start}"),
                "l": (q_axis,),
                "O": (q_axis, "feature"),
                "output": (q_axis, "feature"),
            },
            keys=k_tile,
            values=v_tile,
            scaled=scaled,
            m_old=m_old,
            m=m,
            rescale=rescale,
            p=p,
            l=l,
            O=O,
            output=normalise(O, l),
        )

    yield stage(
        "tiles",
        f"After the last of {-(-n // tile)} tiles of {tile} keys: each row's maximum and sum",
        formula="m = max_j ω[i,j]/√d_k,   l = Σ_j exp(ω[i,j]/√d_k - m)",
        axes=(q_axis,),
        m=m,
        l=l,
    )

    context = normalise(O, l)
    yield stage(
        "context",
        "Context vectors: the running sum divided by the running total",
        formula="Z = O / l",
        axes=(q_axis, "feature"),
        context=context,
    )
    return context if run.query is None else context[0]


def normalise(weighted: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """weighted / total per row; a row that has seen no visible key yet is zeros, not NaN."""
    safe = total.clamp_min(torch.finfo(total.dtype).tiny).unsqueeze(1)
    return torch.where(total.unsqueeze(1) > 0, weighted / safe, 0.0)


# Mistakes learners make in the recurrence, as changed loops (attn check names one when it
# reproduces their numbers). A learner's tile may differ from -o tile, so each is tried
# at several tile sizes.
def tiled(
    run: RunContext,
    tile: int,
    *,
    rescale_sum: bool = True,
    rescale_values: bool = True,
    local: bool = False,
):
    """The recurrence over tiles of ``tile`` keys, without a rescale (of l, of O) or with a
    causal index local to the tile (key positions counted from the tile's start)."""
    W = run.weights
    queries, keys, values = run.inputs @ W.query, run.inputs @ W.key, run.inputs @ W.value
    n, d_k = keys.shape[0], keys.shape[-1]
    rows = torch.arange(queries.shape[0]).unsqueeze(1)
    m = torch.full((queries.shape[0],), float("-inf"))
    l = torch.zeros(queries.shape[0])
    O = torch.zeros(queries.shape[0], values.shape[-1])
    for start in range(0, n, tile):
        stop = min(start + tile, n)
        scaled = queries @ keys[start:stop].T / d_k**0.5
        if run.options["causal"]:
            columns = torch.arange(stop - start) if local else torch.arange(start, stop)
            scaled = scaled.masked_fill(columns.unsqueeze(0) > rows, float("-inf"))
        m_old, m = m, torch.maximum(m, scaled.max(dim=-1).values)
        shift = torch.where(m == float("-inf"), 0.0, m)
        factor = torch.exp(m_old - shift)
        p = torch.exp(scaled - shift.unsqueeze(1))
        l = (factor * l if rescale_sum else l) + p.sum(dim=-1)
        O = (factor.unsqueeze(1) * O if rescale_values else O) + p @ values[start:stop]
    return {"context": O / l.unsqueeze(1)}


def _causal_or_not(run: RunContext):
    n = run.inputs.shape[0]
    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if run.options["causal"] else None


def _at_tiles(code: str, title: str, advice: str, ops, **change) -> tuple[Mistake, ...]:
    return tuple(
        Mistake(
            code,
            title,
            advice,
            lambda run, size=size: tiled(run, size or run.options["tile"], **change),
            ops=ops,
        )
        for size in (0, 1, 2, 3, 4)  # 0: the variant's own tile
    )


MISTAKES = (
    *common_mistakes(_causal_or_not),
    *(
        mistake
        for title, change in (
            ("running sums that are not rescaled", {"rescale_sum": False, "rescale_values": False}),
            ("a running total l that is not rescaled", {"rescale_sum": False}),
            ("a running weighted sum O that is not rescaled", {"rescale_values": False}),
        )
        for mistake in _at_tiles(
            "no-rescale",
            f"{title} when the maximum grows",
            "when a tile raises the running maximum from m to m_new, multiply both l and O by "
            "exp(m - m_new) before adding the tile's terms.",
            ("add", "__add__", "__iadd__", "add_"),
            **change,
        )
    ),
    *_at_tiles(
        "tile-local-index",
        "a causal index counted from the tile's start",
        "compare each key's position in the whole text with the query's: "
        "`torch.arange(start, stop)`, not `torch.arange(stop - start)`.",
        ("masked_fill", "masked_fill_", "where"),
        local=True,
    ),
)


def cost(sizes: Sizes) -> Cost:
    """One sub-step per tile of keys, each with every computed query's running statistics."""
    n, d, e, tile = sizes.tokens, sizes.d_out, sizes.d_in, sizes.options["tile"]
    side, queries = min(tile, n), 1 if sizes.query is not None else n
    count = -(-n // tile)
    return Cost(
        substeps=count,
        values=count * (queries * (4 * side + 3 * d + 4) + side * (e + 2 * d)),
        elements=n * (2 * e + 6 * d + 8) + 4 * queries * side + 4 * e * d,
        table=max(n * (e + d), queries * side, e * d),
        larger=("tile",),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="online-softmax",
            title="Online softmax: attention one tile of keys at a time",
            description="-o tile=N keys per tile (default 2), -o causal=true to hide later keys.",
            options=(TILE, CAUSAL),
            run=online_softmax,
            cost=cost,
            mistakes=MISTAKES,
            stages=("inputs", "projected", "tiles", "context"),
            loops=("tiles",),
        )
    )
