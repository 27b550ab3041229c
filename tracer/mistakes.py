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
