"""Helpers for testing a variant in a plugin's own test suite.

::

    from tracer.testing import run_variant, sdpa_reference, assert_close

    def test_my_variant_matches_torch():
        trace = run_variant("my-variant", init="randn", d_out=3, window=2)
        assert_close(trace.output, sdpa_reference(trace, causal=True))

``run_variant`` accepts a variant's name (found the way ``attn`` finds it:
entry points, then ``plugins_dir``) or a :class:`~tracer.Variant` object that
is not installed at all, runs it to the end through the real tracer (so every
yield is checked as it would be in the app) and returns the trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.tracing.runner import (
    DEFAULT_INIT,
    DEFAULT_SEED,
    TraceOptions,
    build_context,
    resolve_inputs,
)
from tracer.variant import SubStep, Variant

__all__ = [
    "assert_close",
    "assert_stages_in_order",
    "run_variant",
    "sdpa_reference",
    "substeps_of",
]


def run_variant(
    variant: str | Variant,
    *,
    inputs: str | InputSet | None = None,
    seed: int = DEFAULT_SEED,
    init: str = DEFAULT_INIT,
    d_out: int | None = None,
    dropout: float = 0.0,
    query: int | str | None = None,
    source: str | InputSet | None = None,
    plugins_dir: Sequence[str | Path] = (),
    options: Mapping[str, Any] | Any = None,
    keep_substeps: bool = False,
    **named_options: Any,
) -> Trace:
    """Run ``variant`` to the end with these trace options and the variant's own options.

    The variant's options come as keywords (``window=2``) or, for a name Python
    cannot take as a keyword (``lambda``) or one that clashes with a parameter
    here, in ``options={"lambda": 0.5}``; both may be given. Options are checked
    exactly as ``attn trace -o NAME=VALUE`` checks them, so a test can also assert
    that a bad value raises :class:`tracer.errors.UsageError`.

    ``inputs`` defaults, as ``attn trace`` does, to the variant's own inputs if it has them
    (``induction``'s repeated letters), else ``your-journey``.
    ``source`` is a second sequence (``--source``), for variants that read ``run.source``.
    With ``keep_substeps=True`` every loop iteration is kept in ``trace.substeps``
    (see :func:`substeps_of`).
    """
    trace_options = TraceOptions(
        inputs=inputs,
        seed=seed,
        init=init,
        d_out=d_out,
        dropout=dropout,
        query=query,
        options=_variant_options(options, named_options),
        source=source,
    )
    if isinstance(variant, Variant):
        context = build_context(resolve_inputs(inputs, variant), trace_options, variant=variant)
        return Trace(variant, context).run_to_end(keep_substeps)
    host = PluginHost(plugins_dir, strict=True)
    found = host.variant(variant)
    context = build_context(resolve_inputs(inputs, found), trace_options, variant=found)
    return host.start(variant, context).run_to_end(keep_substeps)


def _variant_options(options: Any, named: dict[str, Any]) -> dict[str, Any]:
    """The keywords merged with the ``options`` mapping; a non-mapping ``options=`` is what
    it was before the mapping existed: the value of a variant option called ``options``."""
    if options is None:
        return dict(named)
    if not isinstance(options, Mapping):
        return {**named, "options": options}
    return {**named, **options}


def sdpa_reference(trace: Trace, *, causal: bool = False) -> torch.Tensor:
    """torch's own scaled dot-product attention on the trace's inputs and weights.

    With a second sequence (``run.source``), keys and values come from it: cross-attention.
    The focused query's row when the trace has one; needs ``uses_weights=True``.
    """
    context = trace.context
    if context.weights is None:
        raise ValueError(f"variant '{trace.variant.name}' runs without query/key/value weights")
    x, W = context.inputs, context.weights
    keys, values = x @ W.key, x @ W.value
    source = context.source
    if source is not None and source.weights is not None:  # cross-attention: keys from it
        keys, values = source.inputs @ source.weights.key, source.inputs @ source.weights.value
    out = F.scaled_dot_product_attention(x @ W.query, keys, values, is_causal=causal)
    return context.focus(out)


def assert_close(
    actual: object, expected: object, *, atol: float = 1e-5, rtol: float = 1e-5
) -> None:
    """``torch.testing.assert_close`` with tolerances suited to float32 attention."""
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


def assert_stages_in_order(trace: Trace) -> None:
    """Every stage the variant declares was yielded, once, in the declared order."""
    yielded = [stage.name for stage in trace.stages]
    declared = list(trace.variant.stages)
    if yielded != declared:
        raise AssertionError(
            f"variant '{trace.variant.name}' yielded stages {yielded}, declared {declared}"
        )


def substeps_of(trace: Trace, stage: str) -> list[SubStep]:
    """The sub-steps of the loop that built ``stage``, in order.

    The trace must come from ``run_variant(..., keep_substeps=True)``.
    """
    if stage not in trace.variant.loops:
        raise ValueError(
            f"variant '{trace.variant.name}' builds no stage '{stage}' in a loop; its loops: "
            f"{', '.join(trace.variant.loops) or 'none'}"
        )
    if not trace.kept_substeps:
        raise ValueError("no sub-steps were kept: run the variant with keep_substeps=True")
    return [step for step in trace.substeps if step.stage == stage]
