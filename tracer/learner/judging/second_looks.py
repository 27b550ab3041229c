"""Second configurations that expose what a variant's defaults hide.

A file that passes on the defaults is checked again where a mistake the
defaults cannot show would show:

- online softmax: on weights where each row's running maximum grows from
  tile to tile (a sum that is never rescaled is exact while it does not);
- sliding window: on a text longer than the window (else the band hides nothing);
- grouped-query: with more query heads than key/value heads, two key/value heads
  or more (with one, ``repeat`` and ``repeat_interleave`` agree);
- a module with dropout: built with dropout on, then switched to eval mode,
  where its output must be the one without dropout (``F.dropout`` without
  ``training=self.training`` keeps dropping).

Each is a function ``(reference, first result, result so far, earlier changes) ->
changes or None``: the trace options to change (``seed``, ``init``, ``options``,
``d_out``) and, for eval mode, :data:`EVAL_DROPOUT`, which is not a trace option
but how the learner's module is built. :data:`LOOKS` lists them with the line
that says why each ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tracer.inputs.weights import make_weights
from tracer.tracing import Trace

TILES = (1, 2, 3, 4)
"""Tile sizes a learner's online softmax may use: the re-check moves the maximum for each."""
SEEDS = 20
"""Seeds tried (from the user's) for weights whose running maximum moves."""
EVAL_RATE = 0.5
EVAL_DROPOUT = "eval_dropout"
"""A change that is no trace option: build the learner's module with this dropout rate and
check it in eval mode, against the reference without dropout."""

Changes = Callable[[Trace, Any, Any, dict[str, Any]], "dict[str, Any] | None"]


def maximum_moves(queries: torch.Tensor, keys: torch.Tensor, tile: int) -> bool:
    """Whether some query's running maximum grows after its first tile of ``tile`` keys."""
    scores = queries @ keys.T
    n = scores.shape[-1]
    if n <= tile:
        return False
    before = scores[:, :tile].max(dim=-1).values
    for start in range(tile, n, tile):
        best = scores[:, start : start + tile].max(dim=-1).values
        if bool((best > before + 1e-6).any()):
            return True
        before = torch.maximum(before, best)
    return False


def _moves_everywhere(inputs: torch.Tensor, query: torch.Tensor, key: torch.Tensor) -> bool:
    return all(maximum_moves(inputs @ query, inputs @ key, tile) for tile in TILES)


def moving_maximum(
    trace: Trace, first: Any, passed: Any, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    """Weights (a seed, an init) under which the running maximum moves at every tile size."""
    context = trace.context
    if not passed.matches or "tile" not in context.extra or context.weights is None:
        return None
    if context.init is None:
        return None  # weights from a file: nothing to draw again
    inputs, weights = context.inputs, context.weights
    if _moves_everywhere(inputs, weights.query, weights.key):
        return None
    d_in, d_out = int(inputs.shape[-1]), int(weights.query.shape[-1])
    for init in dict.fromkeys((context.init, "randn")):
        for seed in range(context.seed, context.seed + SEEDS):
            drawn = make_weights(init, d_in, d_out, seed)
            if _moves_everywhere(inputs, drawn.query, drawn.key):
                return {"seed": seed, "init": init}
    return None


def shorter_window(
    trace: Trace, first: Any, passed: Any, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    window, n = trace.context.extra.get("window"), len(trace.tokens)
    if not passed.matches or not isinstance(window, int) or window < n or n <= 2:
        return None
    return {"options": {**trace.context.extra, "window": max(2, n // 2)}}


def grouped_heads(
    trace: Trace, first: Any, passed: Any, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    extra = trace.context.extra
    heads, kv_heads = extra.get("heads"), extra.get("kv_heads")
    if not passed.matches or not isinstance(heads, int) or not isinstance(kv_heads, int):
        return None
    if kv_heads > 1 and heads > kv_heads:
        return None
    weights = trace.context.weights
    d_out = int(weights.query.shape[-1]) if weights is not None else 8
    d_out = d_out if d_out % 4 == 0 and d_out >= 8 else 8
    return {"options": {**extra, "heads": 4, "kv_heads": 2}, "d_out": d_out}


def eval_mode(
    trace: Trace, first: Any, passed: Any, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    module = str(first.called).startswith(("class ", "the module "))
    has_dropout = any(stage.name == "dropout" for stage in trace.stages)
    if not (passed.matches and module and first.takes_dropout and has_dropout):
        return None
    return {EVAL_DROPOUT: EVAL_RATE} if trace.context.dropout == 0 else None


def _options(changes: dict[str, Any]) -> str:
    shown = []
    for key, value in changes.items():
        if key == "options":
            shown += [f"-o {k}={v}" for k, v in value.items() if k in ("window", "kv_heads")]
            if "kv_heads" in value:
                shown.insert(0, f"--heads {value['heads']}")
        else:
            shown.append(f"--{key.replace('_', '-')} {value}")
    return " ".join(shown)


LOOKS: tuple[tuple[str, Changes, Callable[[Trace, dict[str, Any]], str]], ...] = (
    (
        "moving_maximum",
        moving_maximum,
        lambda trace, changes: (
            "with these weights no query's running maximum grows from one tile to the next, "
            f"so a sum that is never rescaled would pass; checked again with {_options(changes)}"
        ),
    ),
    (
        "shorter_window",
        shorter_window,
        lambda trace, changes: (
            f"the window ({trace.context.extra.get('window')}) covers the whole text "
            f"({len(trace.tokens)} tokens), so the band hides nothing; checked again with "
            f"{_options(changes)}"
        ),
    ),
    (
        "grouped_heads",
        grouped_heads,
        lambda trace, changes: (
            "with one key/value head, or one per query head, tiling and interleaving the "
            f"key/value heads agree; checked again with {_options(changes)}"
        ),
    ),
    (
        "eval_mode",
        eval_mode,
        lambda trace, changes: (
            f"your module was built with dropout {changes[EVAL_DROPOUT]:g} and switched to "
            "eval mode, where dropout must be off"
        ),
    ),
)
"""(JSON key, changes, why) for each second look, in the order they run."""
