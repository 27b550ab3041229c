"""Multi-head attention as a stack of causal single-head attentions, side by side.

Each head is the ``masked`` variant with its own query, key and value
projections; the heads' context vectors are concatenated. ``--d-out`` is each
head's width (as in the course material's ``MultiHeadAttentionWrapper``), so
the output has heads × d_out columns. ``--heads N`` sets the number of heads.

Weights, by ``--init`` (all drawn under ``torch.manual_seed(--seed)``):
- ``linear``: ``nn.Linear(d_in, d_out, bias=False)`` for head 0's query, key,
  value, then head 1's, and so on: the order in which the course's wrapper
  creates them, so its printed numbers reproduce;
- ``rand`` / ``randn``: ``torch.rand(d_in, d_out)`` in that same order, so head 0
  has exactly the weights of ``attn trace masked``;
- weights from an inputs file: their d_out columns are shared out among the
  heads (head h gets columns h·w .. (h+1)·w - 1), which needs d_out divisible
  by the number of heads.
"""

import torch
from tracer.builtin_plugins._causal_core import causal_attention

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage
from tracer.errors import UsageError
from tracer.mistakes import causal

DEFAULT_HEADS = 2
HEADS = Option(
    "heads", int, DEFAULT_HEADS, "number of attention heads (--heads N for short)", min=1, max=64
)
"""Declared by both multi-head variants; the tool checks values before the run starts."""


def heads_option(run: RunContext) -> int:
    return run.options.get("heads", DEFAULT_HEADS)


def file_weights_error(d_out: int, heads: int) -> UsageError:
    divisors = " or ".join(str(d) for d in range(1, d_out + 1) if d_out % d == 0)
    return UsageError(
        f"the inputs file's weights have d_out = {d_out}, which --heads {heads} cannot "
        f"split into equal heads; use --heads {divisors}"
    )


def head_weights(
    run: RunContext, heads: int
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(W_query, W_key, W_value) for each head, each (d_in, head width), applied as x @ W."""
    W = run.weights
    d_in, d_out = W.query.shape
    init = run.init
    if init is None:
        if d_out % heads:
            raise file_weights_error(d_out, heads)
        width = d_out // heads
        return [
            tuple(m[:, h * width : (h + 1) * width] for m in (W.query, W.key, W.value))
            for h in range(heads)
        ]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(run.seed)
        if init == "linear":
            layers = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(3 * heads)]
            matrices = [layer.weight.detach().T for layer in layers]
        else:
            draw = torch.rand if init == "rand" else torch.randn
            matrices = [draw(d_in, d_out) for _ in range(3 * heads)]
    return [tuple(matrices[3 * h : 3 * h + 3]) for h in range(heads)]


def multihead_wrapper(run: RunContext):
    heads = heads_option(run)
    inputs = run.inputs
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    per_head = head_weights(run, heads)

    # Stacked (heads, d_in, width): one slice per head, so every stage pages through heads.
    W_query = torch.stack([w[0] for w in per_head])
    W_key = torch.stack([w[1] for w in per_head])
    W_value = torch.stack([w[2] for w in per_head])
    yield stage(
        "projections",
        f"Each of the {heads} heads has its own projections",
        axes=("head", "feature", "feature"),
        W_query=W_query,
        W_key=W_key,
        W_value=W_value,
    )

    queries = inputs @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    yield stage(
        "queries",
        "Queries, per head",
        formula="Q_h = X W_q,h",
        axes=("head", "query", "feature"),
        queries=focus(run, queries),
    )
    yield stage(
        "keys",
        "Keys, per head",
        formula="K_h = X W_k,h",
        axes=("head", "key", "feature"),
        keys=keys,
    )
    yield stage(
        "values",
        "Values, per head",
        formula="V_h = X W_v,h",
        axes=("head", "key", "feature"),
        values=values,
    )

    # Every head is causal attention on its own slice: the core ``masked`` uses.
    dropped = yield from causal_attention(run, queries, keys, values, heads=True)

    head_context = dropped @ values
    yield stage(
        "head_context",
        "Each head's context vectors",
        formula="Z_h = α_h V_h",
        axes=("head", "query", "feature"),
        head_context=focus(run, head_context),
    )

    context = torch.cat(list(head_context), dim=-1)
    context = run.focus(context)
    yield stage(
        "context",
        f"Heads side by side: {heads} × {values.shape[-1]} columns",
        formula="Z = [Z_0 | Z_1 | ...]",
        axes=("query", "feature"),
        context=context,
    )
    return context


def focus(run: RunContext, per_head: torch.Tensor) -> torch.Tensor:
    """Row ``query`` of each head when a query is focused: (heads, tokens, ...) -> (heads, ...)."""
    return per_head if run.query is None else per_head[:, run.query]


# Mistakes learners make here, as changes to every head (attn check names one when it
# reproduces their numbers).
def stacked(run: RunContext, hidden, *, scale=None, softmax_dim=-1):
    """Every head's causal attention, side by side, with one thing changed."""
    inputs = run.inputs
    per_head = head_weights(run, heads_option(run))
    W_query, W_key, W_value = (torch.stack([w[i] for w in per_head]) for i in range(3))
    queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
    width = keys.shape[-1]
    scaled = queries @ keys.transpose(1, 2) * (width**-0.5 if scale is None else scale)
    masked = scaled if hidden is None else scaled.masked_fill(hidden, float("-inf"))
    weights = torch.softmax(masked, dim=softmax_dim).nan_to_num(0.0)
    head_context = weights @ values
    return {
        "scaled": scaled,
        "masked_scores": masked,
        "weights": weights,
        "head_context": head_context,
        "context": torch.cat(list(head_context), dim=-1),
    }


def _width(run: RunContext) -> int:
    return head_weights(run, heads_option(run))[0][0].shape[-1]


SCALE_OPS = ("div", "__truediv__", "mul", "__mul__")

MISTAKES = (
    Mistake(
        "scaling",
        "dividing the scores by d_k instead of √d_k",
        "divide each head's scores by the square root of its key width: `/ keys.shape[-1] ** 0.5`.",
        lambda run: stacked(run, causal(run), scale=1 / _width(run)),
        ops=SCALE_OPS,
    ),
    Mistake(
        "scaling",
        "scores not scaled",
        "divide each head's scores by √d_k (`/ keys.shape[-1] ** 0.5`) before the softmax.",
        lambda run: stacked(run, causal(run), scale=1.0),
        ops=("matmul", "__matmul__"),
    ),
    Mistake(
        "scaling",
        "multiplying the scores by √d_k instead of dividing",
        "divide the scores by √d_k; multiplying sharpens the softmax instead of calming it.",
        lambda run: stacked(run, causal(run), scale=_width(run) ** 0.5),
        ops=SCALE_OPS,
    ),
    Mistake(
        "scaling",
        "scaling by the width of all the heads together",
        "each head is its own attention: √d_k is the square root of one head's key width, "
        "not of the concatenated output's.",
        lambda run: stacked(run, causal(run), scale=(_width(run) * heads_option(run)) ** -0.5),
        ops=SCALE_OPS,
    ),
    Mistake(
        "softmax-dim",
        "softmax over the wrong dimension",
        "each query's weights must sum to 1 across the keys: `softmax(..., dim=-1)`.",
        lambda run: stacked(run, causal(run), softmax_dim=-2),
        ops=("softmax",),
    ),
    Mistake(
        "mask-diagonal",
        "a mask that includes the diagonal",
        "hide only later keys: `torch.triu(torch.ones(n, n), diagonal=1)`.",
        lambda run: stacked(run, causal(run, 0)),
        ops=("triu", "tril"),
    ),
    Mistake(
        "mask-unused",
        "no causal mask applied",
        "hide later keys before the softmax: "
        "`scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)`.",
        lambda run: stacked(run, None),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """Six tokens x tokens tables per head (scores, mask, weights...)."""
    n, d, e, heads = sizes.tokens, sizes.d_out, sizes.d_in, sizes.options["heads"]
    return Cost(
        elements=6 * heads * n * n + 4 * n * (e + 2 * heads * d) + 8 * heads * e * d,
        table=max(heads * n * n, 2 * n * (e + heads * d), 3 * heads * e * d),
        smaller=("heads",),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="multihead-wrapper",
            title="Multi-head attention: causal heads stacked and concatenated",
            description="--d-out is each head's width; --heads N heads (default 2).",
            options=(HEADS,),
            run=multihead_wrapper,
            cost=cost,
            mistakes=MISTAKES,
            stages=(
                "inputs",
                "projections",
                "queries",
                "keys",
                "values",
                "scores",
                "scaled",
                "mask",
                "masked_scores",
                "weights",
                "dropout",
                "head_context",
                "context",
            ),
        )
    )
