"""Multi-head attention with one projection split into heads (``view`` + ``transpose``).

Instead of one small projection per head, one (d_in, d_out) projection each for
queries, keys and values is computed once and its columns are split into heads:
``(tokens, d_out) -> (tokens, heads, head_dim) -> (heads, tokens, head_dim)``.
Every head then runs causal attention on its own slice, the heads' context
vectors are put back side by side, and an output projection (with bias) mixes
them. ``--d-out`` is the total width, as in the course material's
``MultiHeadAttention``, so it must be divisible by ``--heads``.

Weights, by ``--init`` (all drawn under ``torch.manual_seed(--seed)``):
- ``linear``: ``nn.Linear(d_in, d_out, bias=False)`` for query, key and value,
  then ``nn.Linear(d_out, d_out)`` for the output projection: the course's
  order, so its printed numbers reproduce;
- ``rand`` / ``randn``: query, key and value exactly as ``attn trace trainable``
  draws them, then the output weight (d_out, d_out) and bias (d_out,) with the
  same function;
- weights from an inputs file: those projections, and an identity output
  projection with zero bias (the file has no output projection to offer).
"""

import torch
from tracer.builtin_plugins._causal_core import causal_attention
from tracer.builtin_plugins.multihead_wrapper import (
    HEADS,
    file_weights_error,
    focus,
    heads_option,
)

from tracer import Cost, RunContext, Sizes, Variant, hookimpl, stage
from tracer.errors import UsageError
from tracer.mistakes import head_mistakes


def split_weights(run: RunContext, d_out: int):
    """(W_query, W_key, W_value, W_out, b_out): outputs are ``x @ W`` and ``z @ W_out + b_out``."""
    W = run.weights
    d_in = W.query.shape[0]
    init = run.init
    if init is None:
        return W.query, W.key, W.value, torch.eye(d_out), torch.zeros(d_out)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(run.seed)
        if init == "linear":
            qkv = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(3)]
            out = torch.nn.Linear(d_out, d_out)
            matrices = [layer.weight.detach().T for layer in qkv]
            return (*matrices, out.weight.detach().T, out.bias.detach())
        draw = torch.rand if init == "rand" else torch.randn
        matrices = [draw(d_in, d_out) for _ in range(3)]
        return (*matrices, draw(d_out, d_out), draw(d_out))


def multihead(run: RunContext):
    heads = heads_option(run)
    inputs = run.inputs
    n = inputs.shape[0]
    d_out = run.weights.query.shape[1]
    if d_out % heads and run.init is None:
        raise file_weights_error(d_out, heads)
    if d_out % heads:
        nearby = [d for d in (d_out // heads * heads, (d_out // heads + 1) * heads) if d > 0]
        raise UsageError(
            f"--d-out {d_out} is not divisible by --heads {heads}: multihead splits d_out "
            f"into {heads} equal heads (try --d-out {' or '.join(map(str, nearby))})"
        )
    head_dim = d_out // heads
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    W_query, W_key, W_value, W_out, b_out = split_weights(run, d_out)
    yield stage(
        "projections",
        "One projection each for queries, keys, values, and an output projection",
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
        f"Queries, keys and values for all heads at once ({d_out} columns)",
        formula="Q = X W_q,  K = X W_k,  V = X W_v",
        axes={
            "queries": ("query", "feature"),
            "keys": ("key", "feature"),
            "values": ("key", "feature"),
        },
        queries=run.focus(queries),
        keys=keys,
        values=values,
    )

    # (tokens, d_out) -> (tokens, heads, head_dim) -> (heads, tokens, head_dim)
    queries = queries.view(n, heads, head_dim).transpose(0, 1)
    keys = keys.view(n, heads, head_dim).transpose(0, 1)
    values = values.view(n, heads, head_dim).transpose(0, 1)
    yield stage(
        "split",
        f"Split into {heads} head{'s' * (heads != 1)} of {head_dim} "
        f"column{'s' * (head_dim != 1)}{' each' * (heads != 1)}",
        formula="view(tokens, heads, head_dim).transpose(0, 1)",
        axes={
            "queries": ("head", "query", "feature"),
            "keys": ("head", "key", "feature"),
            "values": ("head", "key", "feature"),
        },
        queries=focus(run, queries),
        keys=keys,
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

    # (heads, tokens, head_dim) -> (tokens, heads, head_dim) -> (tokens, d_out)
    concat = head_context.transpose(0, 1).contiguous().view(n, d_out)
    yield stage(
        "concat",
        "Heads put back side by side",
        formula="transpose(0, 1).view(tokens, d_out)",
        axes=("query", "feature"),
        concat=run.focus(concat),
    )

    context = run.focus(concat @ W_out + b_out)
    yield stage(
        "context",
        "Output projection mixes the heads",
        formula="Z = concat W_o + b_o",
        axes=("query", "feature"),
        context=context,
    )
    return context


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
            name="multihead",
            title="Multi-head attention: one projection split into heads",
            description="--d-out is the total width, divisible by --heads N (default 2).",
            options=(HEADS,),
            run=multihead,
            cost=cost,
            mistakes=head_mistakes(
                lambda run: split_weights(run, run.weights.query.shape[1]), heads_option
            ),
            stages=(
                "inputs",
                "projections",
                "projected",
                "split",
                "scores",
                "scaled",
                "mask",
                "masked_scores",
                "weights",
                "dropout",
                "head_context",
                "concat",
                "context",
            ),
        )
    )
