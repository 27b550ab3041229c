"""Helpers for writing a variant's :class:`~tracer.variant.Mistake` s: single-head attention
with one thing changed (the scale, the hidden pairs, the softmax's dimension).

A plugin declares its mistakes beside its code::

    from tracer.mistakes import attend, causal, common_mistakes

    MISTAKES = (*common_mistakes(causal), Mistake("...", "...", "...", lambda run: ...))

Every function here returns the tensors under the names the built-in variants use
(``scaled``, ``masked_scores``, ``weights``, ``context``), so ``attn check`` can look
for them among a learner's tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from tracer.variant import Mistake, RunContext

Hidden = Callable[[RunContext], "torch.Tensor | None"]
"""The (query, key) pairs a variant hides (True = hidden), or None for none."""


def causal(run: RunContext, offset: int = 1) -> torch.Tensor:
    """Keys after the query hidden: ``offset=1`` is right, 0 also hides the diagonal."""
    n = run.inputs.shape[0]
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=offset)


def nothing(run: RunContext) -> None:
    return None


def attend(
    run: RunContext,
    hidden: torch.Tensor | None,
    *,
    scale: float | None = None,
    softmax_dim: int = -1,
    bonus: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Single-head attention on ``run``'s inputs and weights with the given changes.

    ``scale`` multiplies the scores (default 1/√d_k); ``bonus`` is added to the
    masked scores (``log 2`` on a key counts it twice). Padding stays hidden.
    """
    inputs, W = run.inputs, run.weights
    assert W is not None
    queries, keys, values = inputs @ W.query, inputs @ W.key, inputs @ W.value
    d_k = keys.shape[-1]
    scores = queries @ keys.T
    scaled = scores * (1 / math.sqrt(d_k) if scale is None else scale)
    if run.padding is not None:
        padding = torch.tensor(run.padding).expand_as(scaled)
        hidden = padding if hidden is None else hidden | padding
    masked = scaled if hidden is None else scaled.masked_fill(hidden, float("-inf"))
    if bonus is not None:
        masked = masked + bonus
    weights = torch.softmax(masked, dim=softmax_dim).nan_to_num(0.0)
    return {
        "scaled": scaled,
        "masked_scores": masked,
        "weights": weights,
        "renormalized": weights,
        "context": weights @ values,
    }


def _width(run: RunContext) -> int:
    assert run.weights is not None
    return int(run.weights.query.shape[-1])


def common_mistakes(hidden: Hidden) -> tuple[Mistake, ...]:
    """The scale and softmax mistakes of any single-head attention that hides ``hidden``."""
    return (
        Mistake(
            "scaling",
            "dividing the scores by d_k instead of √d_k",
            "divide the scores by the square root of the key width: `/ keys.shape[-1] ** 0.5`.",
            lambda run: attend(run, hidden(run), scale=1 / _width(run)),
        ),
        Mistake(
            "scaling",
            "scores not scaled",
            "divide the scores by √d_k (`/ keys.shape[-1] ** 0.5`) before the softmax.",
            lambda run: attend(run, hidden(run), scale=1.0),
        ),
        Mistake(
            "scaling",
            "multiplying the scores by √d_k instead of dividing",
            "divide the scores by √d_k; multiplying sharpens the softmax instead of calming it.",
            lambda run: attend(run, hidden(run), scale=math.sqrt(_width(run))),
        ),
        Mistake(
            "scaling",
            "scaling by the input width (d_model) instead of the key width",
            "√d_k is the square root of the keys' width (the queries' and keys' last "
            "dimension), not of the inputs'.",
            lambda run: attend(run, hidden(run), scale=1 / math.sqrt(run.inputs.shape[-1])),
        ),
        Mistake(
            "softmax-dim",
            "softmax over the wrong dimension",
            "each query's weights must sum to 1 across the keys: `softmax(..., dim=-1)`.",
            lambda run: attend(run, hidden(run), softmax_dim=0),
        ),
    )


def causal_mistakes() -> tuple[Mistake, ...]:
    """The mask mistakes of causal attention, with :func:`common_mistakes`."""
    return (
        *common_mistakes(causal),
        Mistake(
            "mask-diagonal",
            "a mask that includes the diagonal",
            "hide only later keys: `torch.triu(torch.ones(n, n), diagonal=1)`.",
            lambda run: attend(run, causal(run, 0)),
        ),
        Mistake(
            "mask-future",
            "a mask shifted by one: each query sees the next token too",
            "hide every key after the query: `torch.triu(torch.ones(n, n), diagonal=1)`.",
            lambda run: attend(run, causal(run, 2)),
        ),
        Mistake(
            "mask-future",
            "the mask hides the past instead of the future",
            "hide the keys after the query (the upper triangle, `torch.triu(..., diagonal=1)`), "
            "not the ones before it.",
            lambda run: attend(run, causal(run, 1).T),
        ),
        Mistake(
            "mask-unused",
            "no causal mask applied",
            "hide later keys before the softmax: "
            "`scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)`.",
            lambda run: attend(run, None),
        ),
    )


Projections = tuple["torch.Tensor", "torch.Tensor", "torch.Tensor", "torch.Tensor", "torch.Tensor"]
"""(W_query, W_key, W_value, W_out, b_out), applied as ``x @ W`` and ``z @ W_out + b_out``."""


def attend_heads(
    run: RunContext,
    projections: Projections,
    heads: int,
    hidden: torch.Tensor | None,
    *,
    scale: float | None = None,
    softmax_dim: int = -1,
) -> dict[str, torch.Tensor]:
    """Multi-head attention (columns split into ``heads``) with the given changes."""
    W_query, W_key, W_value, W_out, b_out = projections
    inputs = run.inputs
    n, d_out = inputs.shape[0], W_query.shape[-1]
    head_dim = d_out // heads

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.view(n, heads, head_dim).transpose(0, 1)

    queries, keys, values = split(inputs @ W_query), split(inputs @ W_key), split(inputs @ W_value)
    scaled = queries @ keys.transpose(1, 2) * (head_dim**-0.5 if scale is None else scale)
    masked = scaled if hidden is None else scaled.masked_fill(hidden, float("-inf"))
    weights = torch.softmax(masked, dim=softmax_dim).nan_to_num(0.0)
    head_context = weights @ values
    concat = head_context.transpose(0, 1).contiguous().view(n, d_out)
    return {
        "scaled": scaled,
        "masked_scores": masked,
        "weights": weights,
        "head_context": head_context,
        "concat": concat,
        "context": concat @ W_out + b_out,
    }


def head_mistakes(
    projections: Callable[[RunContext], Projections], heads: Callable[[RunContext], int]
) -> tuple[Mistake, ...]:
    """The scale, softmax and mask mistakes of causal multi-head attention."""

    def with_changes(
        hidden: Hidden, **changes: Any
    ) -> Callable[[RunContext], dict[str, torch.Tensor]]:
        return lambda run: attend_heads(run, projections(run), heads(run), hidden(run), **changes)

    def head_dim(run: RunContext) -> int:
        return projections(run)[0].shape[-1] // heads(run)

    return (
        Mistake(
            "scaling",
            "dividing the scores by head_dim instead of √head_dim",
            "divide each head's scores by the square root of its width: `/ head_dim ** 0.5`.",
            lambda run: attend_heads(
                run, projections(run), heads(run), causal(run), scale=1 / head_dim(run)
            ),
            ops=("div", "__truediv__", "mul", "__mul__"),
        ),
        Mistake(
            "scaling",
            "scores not scaled",
            "divide each head's scores by √head_dim before the softmax.",
            with_changes(causal, scale=1.0),
            ops=("matmul", "__matmul__", "einsum"),
        ),
        Mistake(
            "scaling",
            "scaling by the model width instead of the head width",
            "√d_k is the square root of one head's width (head_dim = d_out / heads), not of d_out.",
            lambda run: attend_heads(
                run,
                projections(run),
                heads(run),
                causal(run),
                scale=projections(run)[0].shape[-1] ** -0.5,
            ),
            ops=("div", "__truediv__", "mul", "__mul__"),
        ),
        Mistake(
            "softmax-dim",
            "softmax over the wrong dimension",
            "each query's weights must sum to 1 across the keys: `softmax(..., dim=-1)`.",
            with_changes(causal, softmax_dim=-2),
            ops=("softmax",),
        ),
        Mistake(
            "mask-diagonal",
            "a mask that includes the diagonal",
            "hide only later keys: `torch.triu(torch.ones(n, n), diagonal=1)`.",
            with_changes(lambda run: causal(run, 0)),
            ops=("triu", "tril"),
        ),
        Mistake(
            "mask-unused",
            "no causal mask applied",
            "hide later keys before the softmax (`attn_mask=` for nn.MultiheadAttention, "
            "`is_causal=True` for F.scaled_dot_product_attention, or `masked_fill`).",
            with_changes(nothing),
        ),
    )


def attend_simplified(
    run: RunContext,
    *,
    scale: float = 1.0,
    softmax_dim: int = -1,
    normalise: str = "softmax",
    mix: str = "weights",
) -> dict[str, torch.Tensor]:
    """Simplified self-attention (each embedding its own query, key and value) with changes.

    ``normalise="sum"`` divides each row by its sum instead of the softmax; ``mix="scores"``
    mixes the inputs with the scores instead of the weights.
    """
    inputs = run.inputs
    scores = inputs @ inputs.T * scale
    if normalise == "sum":
        weights = scores / scores.sum(dim=-1, keepdim=True)
    else:
        weights = torch.softmax(scores, dim=softmax_dim)
    return {
        "scores": scores,
        "weights": weights,
        "context": (scores if mix == "scores" else weights) @ inputs,
    }


def simplified_mistakes() -> tuple[Mistake, ...]:
    """The mistakes of simplified self-attention (no weights, no scale yet)."""
    return (
        Mistake(
            "softmax-dim",
            "softmax over the wrong dimension",
            "each query's weights must sum to 1 across the keys: `softmax(scores, dim=-1)`.",
            lambda run: attend_simplified(run, softmax_dim=0),
            ops=("softmax",),
        ),
        Mistake(
            "sum-normalised",
            "weights normalised by their sum instead of the softmax",
            "dividing by the row sum is the notebook's first try; the weights are "
            "`torch.softmax(scores, dim=-1)`.",
            lambda run: attend_simplified(run, normalise="sum"),
            ops=("div", "__truediv__", "sum"),
        ),
        Mistake(
            "scaling",
            "scores scaled, though simplified attention has no √d_k yet",
            "the scores here are plain dot products: `inputs @ inputs.T`, no division.",
            lambda run: attend_simplified(run, scale=run.inputs.shape[-1] ** -0.5),
            ops=("div", "__truediv__", "mul", "__mul__"),
        ),
        Mistake(
            "scores-as-weights",
            "the scores used where the weights belong",
            "mix the inputs with the normalised weights: `weights @ inputs`, not `scores @ inputs`.",
            lambda run: attend_simplified(run, mix="scores"),
        ),
    )
