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

Each configuration is a change to the trace options (and, for eval mode, how
the learner's module is built), with the sentence that says why it was run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from tracer.runner import TraceOptions
from tracer.tracing import Trace

TILES = (1, 2, 3, 4)
"""Tile sizes a learner's online softmax may use: the re-check moves the maximum for each."""
SEEDS = 20
"""Seeds tried (from the user's) for weights whose running maximum moves."""
EVAL_RATE = 0.5


@dataclass(frozen=True)
class Configuration:
    reason: str
    """Why it runs, in words: printed above its report when it finds a mistake."""
    changes: dict[str, Any] = field(default_factory=dict)
    """Changes to the trace options (``seed``, ``init``, ``d_out``, ``options``)."""
    eval_dropout: float | None = None
    """Build the learner's module with this dropout rate and check it in eval mode."""


Retrace = Callable[[TraceOptions], Trace]


def _tensor(trace: Trace, name: str) -> torch.Tensor | None:
    for stage in trace.stages:
        tensor = stage.tensors.get(name)
        if tensor is not None and tensor.is_floating_point():
            return tensor
    return None


def maximum_moves(trace: Trace, tile: int) -> bool:
    """Whether some query's running maximum grows after its first tile of ``tile`` keys."""
    queries, keys = _tensor(trace, "queries"), _tensor(trace, "keys")
    if queries is None or keys is None or queries.dim() != 2 or keys.dim() != 2:
        return False
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


def _moving_weights(trace: Trace, options: TraceOptions, retrace: Retrace) -> dict[str, Any]:
    """Seed and init under which the running maximum moves at every tile size, if any."""
    for init in dict.fromkeys((options.init, "randn")):
        for seed in range(options.seed, options.seed + SEEDS):
            changes: dict[str, Any] = {"seed": seed, "init": init}
            if seed == options.seed and init == options.init:
                candidate = trace
            else:
                try:
                    candidate = retrace(replace(options, **changes))
                except Exception:  # options this variant refuses: try the next
                    continue
            if all(maximum_moves(candidate, tile) for tile in TILES):
                return {} if candidate is trace else changes
    return {}


def hidden_by_defaults(
    trace: Trace, options: TraceOptions, retrace: Retrace, *, module: bool, takes_dropout: bool
) -> list[Configuration]:
    """The configurations worth a second check for this trace (none when the defaults show
    everything). ``module``: the learner's code is an nn.Module (it has an eval mode)."""
    found: list[Configuration] = []
    variant_options = dict(trace.context.extra)
    n = len(trace.tokens)
    if "tile" in variant_options:
        changes = _moving_weights(trace, options, retrace)
        if changes:
            found.append(
                Configuration(
                    "with these weights no query's running maximum grows from one tile to the "
                    "next, so a sum that is never rescaled would pass; checked again with "
                    + " ".join(f"--{k} {v}" for k, v in changes.items()),
                    changes,
                )
            )
    window = variant_options.get("window")
    if isinstance(window, int) and window >= n and n > 2:
        smaller = max(2, n // 2)
        found.append(
            Configuration(
                f"the window ({window}) covers the whole text ({n} tokens), so the band hides "
                f"nothing; checked again with -o window={smaller}",
                {"options": {**options.options, "window": smaller}},
            )
        )
    heads, kv_heads = variant_options.get("heads"), variant_options.get("kv_heads")
    if (
        isinstance(heads, int)
        and isinstance(kv_heads, int)
        and (kv_heads == 1 or heads == kv_heads)
    ):
        d_out = trace.context.weights.query.shape[-1] if trace.context.weights is not None else 8
        d_out = d_out if d_out % 4 == 0 and d_out >= 8 else 8
        found.append(
            Configuration(
                f"with {kv_heads} key/value head{'s' if kv_heads > 1 else ''} for {heads} query "
                "heads, tiling and interleaving the key/value heads agree; checked again with "
                f"--heads 4 -o kv_heads=2 --d-out {d_out}",
                {
                    "options": {**options.options, "heads": 4, "kv_heads": 2},
                    "extra": {k: v for k, v in options.extra.items() if k not in ("heads",)},
                    "d_out": d_out,
                },
            )
        )
    has_dropout = any(stage.name == "dropout" for stage in trace.stages)
    if module and takes_dropout and has_dropout and trace.context.dropout == 0:
        found.append(
            Configuration(
                f"your module was built with dropout {EVAL_RATE:g} and switched to eval mode, "
                "where dropout must be off",
                eval_dropout=EVAL_RATE,
            )
        )
    return found
