"""Diagnosis by value: a variant's declared mistakes, tried as mutations of its reference.

The learner's tensors here are computed independently of the mutations (plain torch,
written out in the test), so a mistake is named only when its numbers truly agree.
"""

from __future__ import annotations

import torch

from tracer import Mistake
from tracer.learner.diagnosis import Evidence
from tracer.learner.mutations import merge, mistakes_of, reproduce
from tracer.learner.recorder import Record
from tracer.mistakes import attend
from tracer.runner import TraceOptions, start_trace
from tracer.tracing import Trace


def sliding(window: int = 3) -> Trace:
    return start_trace("sliding-window", TraceOptions(options={"window": window})).run_to_end()


def learner_band(trace: Trace, keep: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(masked scores, context) of a band that keeps ``keep`` keys, written out by hand."""
    context = trace.context
    assert context.weights is not None
    x, W = context.inputs, context.weights
    q, k, v = x @ W.query, x @ W.key, x @ W.value
    n = x.shape[0]
    hidden = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        for j in range(n):
            hidden[i, j] = j > i or j < i - keep + 1
    scores = (q @ k.T / k.shape[-1] ** 0.5).masked_fill(hidden, float("-inf"))
    return scores, torch.softmax(scores, dim=-1) @ v


def evidence(trace: Trace, records: list[Record], output: torch.Tensor) -> Evidence:
    assert trace.output is not None
    return Evidence(
        records=records,
        mutations=[],
        discarded=[],
        changed_arguments=[],
        output=output,
        expected_output=trace.output,
        stages=trace.stages,
    )


def test_a_window_one_too_wide_is_named_at_the_line_that_masks() -> None:
    trace = sliding()
    scores, context = learner_band(trace, keep=4)
    records = [
        Record(0, "matmul", 7, value=torch.zeros(6, 6)),
        Record(1, "masked_fill", 12, value=scores),
        Record(2, "matmul", 13, value=context),
    ]
    found = reproduce(evidence(trace, records, context), mistakes_of(trace.variant), trace.context)
    whole, diagnosis = found[0]
    assert whole and diagnosis.code == "window-off-by-one" and diagnosis.line == 12
    assert "one key too wide" in diagnosis.title


def test_a_correct_band_reproduces_no_mistake() -> None:
    trace = sliding()
    scores, context = learner_band(trace, keep=3)
    records = [Record(0, "masked_fill", 5, value=scores)]
    found = reproduce(evidence(trace, records, context), mistakes_of(trace.variant), trace.context)
    assert found == []


def test_a_plugins_own_mistake_is_tried_too() -> None:
    """Any variant may declare mistakes: here one written in the test, as a plugin would."""
    trace = start_trace("trainable").run_to_end()
    halved = Mistake(
        "half-values",
        "values halved",
        "use the values as they are.",
        lambda run: {"context": attend(run, None)["context"] / 2},
    )
    assert trace.output is not None
    output = trace.output / 2
    records = [Record(0, "div", 9, value=output)]
    found = reproduce(evidence(trace, records, output), (halved,), trace.context)
    assert [(whole, d.code, d.line) for whole, d in found] == [(True, "half-values", 9)]


def test_a_mistake_that_changes_nothing_here_is_not_named() -> None:
    """With heads one key/value head, tiling and interleaving agree: no heads-tiled."""
    trace = start_trace("grouped-query").run_to_end()
    assert trace.output is not None
    found = reproduce(evidence(trace, [], trace.output), mistakes_of(trace.variant), trace.context)
    assert found == []


def test_the_built_in_variants_declare_mistakes() -> None:
    for name in ("trainable", "masked", "multihead", "sliding-window", "grouped-query"):
        variant = start_trace(name).variant
        assert mistakes_of(variant), name
    codes = {m.code for m in mistakes_of(start_trace("kv-cache").variant)}
    assert {"cache-not-updated", "cache-prefilled"} <= codes
    codes = {m.code for m in mistakes_of(start_trace("online-softmax").variant)}
    assert {"no-rescale", "tile-local-index"} <= codes


def test_a_reproduced_output_settles_the_diagnosis() -> None:
    from tracer.learner.diagnosis import Diagnosis

    pattern = Diagnosis("transpose", "t", 3, "m")
    mutated = Diagnosis("inputs-mutated", "i", 2, "m")
    by_value = Diagnosis("scaling", "s", 5, "m")
    assert merge([mutated, pattern], [(True, by_value)]) == [mutated, by_value]
    assert merge([pattern], [(False, by_value)]) == [pattern, by_value]
