"""Diagnosis by value: a variant's declared mistakes, tried as mutations of its reference.

The learner's tensors here are computed independently of the mutations (plain torch,
written out in the test), so a mistake is named only when its numbers truly agree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tracer import Mistake
from tracer.learner.diagnosis import Evidence
from tracer.learner.mutations import merge, mistakes_of, reproduce
from tracer.learner.recorder import Record
from tracer.mistakes import attend
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

Attn = Callable[..., tuple[int, str, str]]


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
    for name in (
        "trainable",
        "masked",
        "multihead",
        "sliding-window",
        "grouped-query",
        "multihead-wrapper",
        "naive-loop",
        "vectorized",
        "training",
    ):
        variant = start_trace(name).variant
        assert mistakes_of(variant), name
    codes = {m.code for m in mistakes_of(start_trace("kv-cache").variant)}
    assert {"cache-not-updated", "cache-prefilled"} <= codes
    codes = {m.code for m in mistakes_of(start_trace("online-softmax").variant)}
    assert {"no-rescale", "tile-local-index"} <= codes
    codes = {m.code for m in mistakes_of(start_trace("rope").variant)}
    assert {"rope-pairing", "rope-positions", "rope-scaling-keys-only"} <= codes
    assert "absorb-transpose" in {m.code for m in mistakes_of(start_trace("mla").variant)}
    codes = {m.code for m in mistakes_of(start_trace("paged-kv-cache").variant)}
    assert "block-table-off-by-one" in codes


def test_a_reproduced_output_settles_the_diagnosis() -> None:
    from tracer.learner.diagnosis import Diagnosis

    pattern = Diagnosis("transpose", "t", 3, "m")
    mutated = Diagnosis("inputs-mutated", "i", 2, "m")
    by_value = Diagnosis("scaling", "s", 5, "m")
    assert merge([mutated, pattern], [(True, by_value)]) == [mutated, by_value]
    assert merge([pattern], [(False, by_value)]) == [pattern, by_value]


SIMPLIFIED = (
    "import torch\n\n\ndef attention(inputs):\n"
    "    scores = inputs @ inputs.T\n"
    "    weights = torch.softmax(scores, dim=-1)\n"
    "    return weights @ inputs\n"
)
LOOPS = (
    "import torch\n\n\ndef attention(inputs):\n"
    "    n = inputs.shape[0]\n"
    "    scores = torch.zeros(n, n)\n"
    "    for i in range(n):\n"
    "        for j in range(n):\n"
    "            scores[i, j] = torch.dot(inputs[i], inputs[j])\n"
    "    weights = torch.softmax(scores, dim=-1)\n"
    "    context = torch.zeros_like(inputs)\n"
    "    for i in range(n):\n"
    "        for j in range(n):\n"
    "            context[i] += weights[i, j] * inputs[j]\n"
    "    return context\n"
)
SOFTMAX = "torch.softmax(scores, dim=-1)"
SUM = "scores / scores.sum(dim=-1, keepdim=True)"
WRAPPER = (Path(__file__).parent / "solutions" / "08_multihead_wrapper.py").read_text()
SCALE = "scores / keys.shape[-1] ** 0.5"
TRAINING = (Path(__file__).parent / "solutions" / "14_training.py").read_text()
TARGETS = "(context - targets)"
UNSCALED = " / keys.shape[-1] ** 0.5, dim=-1)"
WRAPPER_OPTIONS = ("--init", "linear", "--heads", "2", "--d-out", "2")


@pytest.mark.parametrize(
    ("variant", "source", "wrong", "right", "code", "title"),
    [
        ("vectorized", SIMPLIFIED, "dim=-1", "dim=0", "softmax-dim", "softmax over the wrong"),
        ("vectorized", SIMPLIFIED, SOFTMAX, SUM, "sum-normalised", "by their sum"),
        ("vectorized", SIMPLIFIED, "inputs.T\n", "inputs.T / 3**0.5\n", "scaling", "no √d_k yet"),
        ("vectorized", SIMPLIFIED, "weights @", "scores @", "scores-as-weights", "the scores"),
        ("naive-loop", LOOPS, "dim=-1", "dim=0", "softmax-dim", "softmax over the wrong"),
        ("naive-loop", LOOPS, SOFTMAX, SUM, "sum-normalised", "by their sum"),
        ("naive-loop", LOOPS, "[j])\n", "[j]) / 3**0.5\n", "scaling", "no √d_k yet"),
        ("naive-loop", LOOPS, "weights[i, j] *", "scores[i, j] *", "scores-as-weights", "scores"),
        ("multihead-wrapper", WRAPPER, SCALE, "scores / keys.shape[-1]", "scaling", "by d_k"),
        ("multihead-wrapper", WRAPPER, SCALE, "scores", "scaling", "scores not scaled"),
        (
            "multihead-wrapper",
            WRAPPER,
            SCALE,
            "scores * keys.shape[-1] ** 0.5",
            "scaling",
            "multiplying the scores",
        ),
        (
            "multihead-wrapper",
            WRAPPER,
            SCALE,
            "scores / (keys.shape[-1] * 2) ** 0.5",
            "scaling",
            "all the heads together",
        ),
        ("multihead-wrapper", WRAPPER, "dim=-1) @", "dim=0) @", "softmax-dim", "wrong dimension"),
        ("multihead-wrapper", WRAPPER, "diagonal=1", "diagonal=0", "mask-diagonal", "diagonal"),
        (
            "multihead-wrapper",
            WRAPPER,
            "(queries @ keys.T).masked_fill(mask, -torch.inf)",
            "queries @ keys.T",
            "mask-unused",
            "mask",
        ),
        (
            "training",
            TRAINING,
            TARGETS,
            "(context - inputs[partner] @ W_value)",
            "moving-targets",
            "targets",
        ),
        ("training", TRAINING, "range(steps)", "range(steps - 1)", "loop-range", "one step short"),
        ("training", TRAINING, UNSCALED, ", dim=-1)", "scaling", "scores not scaled"),
        ("training", TRAINING, "dim=-1)", "dim=0)", "softmax-dim", "wrong dimension"),
    ],
)
def test_the_first_variants_name_their_mistakes(
    attn: Attn,
    tmp_path: Path,
    variant: str,
    source: str,
    wrong: str,
    right: str,
    code: str,
    title: str,
) -> None:
    """A file with one of the mistakes these variants declare is refused, the mistake named."""
    assert wrong in source
    path = tmp_path / "mine.py"
    path.write_text(source.replace(wrong, right))
    extra = WRAPPER_OPTIONS if variant == "multihead-wrapper" else ()
    status, out, err = attn("check", str(path), "--against", variant, *extra, "--json")
    assert status == 1, out + err
    first = json.loads(out)["diagnoses"][0]
    # A pattern detector that names the same mistake keeps its own wording and line.
    assert first["code"] == code, first
    assert first["line"] is not None
    declared = [m.title for m in mistakes_of(start_trace(variant).variant) if m.code == code]
    assert any(title in t for t in declared), declared


def test_the_simplified_variants_correct_file_names_nothing(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(SIMPLIFIED)
    for variant in ("vectorized", "naive-loop"):
        status, out, err = attn("check", str(path), "--against", variant)
        assert status == 0, out + err
