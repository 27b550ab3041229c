"""The loops of cross-attention, sliding-window and induction: what each sub-step shows is
what numpy computes from the run's own inputs and weights; a lesson steps through them
with the source's token labels, in --plain and in the Markdown export alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from tracer.testing import run_variant, substeps_of
from tracer.variant import source_tokens

Attn = Callable[..., tuple[int, str, str]]


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_cross_attention_loops_over_source_keys() -> None:
    trace = run_variant("cross-attention", keep_substeps=True)
    q = trace.stage("queries").tensors["queries"].double().numpy()
    k = trace.stage("keys").tensors["keys"].double().numpy()
    expected = q @ k.T
    scores = substeps_of(trace, "scores")
    assert [s.position for s in scores] == [
        (i, j) for i in range(q.shape[0]) for j in range(k.shape[0])
    ]
    for sub in scores:
        i, j = sub.position
        assert np.isclose(float(sub.tensors["score"]), expected[i, j], atol=1e-5)
    weights = substeps_of(trace, "weights")
    oracle = numpy_softmax(expected / np.sqrt(k.shape[1]))
    assert len(weights) == q.shape[0]
    for sub in weights:
        (i,) = sub.position
        assert np.allclose(sub.tensors["weights"].double().numpy(), oracle[i], atol=1e-5)


def test_sliding_window_loops_over_the_window_only() -> None:
    window = 2
    trace = run_variant("sliding-window", window=window, keep_substeps=True)
    projected = trace.stage("projected").tensors
    q = projected["queries"].double().numpy()
    k = projected["keys"].double().numpy()
    steps = substeps_of(trace, "masked_scores")
    n = q.shape[0]
    assert [s.position for s in steps] == [
        (i, j) for i in range(n) for j in range(n) if i - window < j <= i
    ]
    for sub in steps:
        i, j = sub.position
        assert np.isclose(float(sub.tensors["scaled"]), q[i] @ k[j] / np.sqrt(k.shape[1]))
    # Focused on one query, the loop is that query's window.
    focused = run_variant("sliding-window", window=window, query=3, keep_substeps=True)
    assert [s.position for s in substeps_of(focused, "masked_scores")] == [(3, 2), (3, 3)]


def test_induction_loops_over_its_predictions() -> None:
    trace = run_variant("induction", keep_substeps=True)
    logits = trace.stage("logits").tensors["logits"].double().numpy()
    probabilities = numpy_softmax(logits)
    steps = substeps_of(trace, "prediction")
    assert [s.position for s in steps] == [(i,) for i in range(len(trace.tokens))]
    for sub in steps:
        (i,) = sub.position
        assert int(sub.tensors["predicted"]) == int(probabilities[i].argmax())
        letter = "ABCDEFGHIJKLMNOPQRST"[int(probabilities[i].argmax())]
        assert f"predicts {letter} with p = {probabilities[i].max():.3f}" in (sub.formula or "")


def test_a_lessons_cross_attention_loop_keeps_the_source_labels(tmp_path: Path, attn: Attn) -> None:
    lesson = tmp_path / "loops.yaml"
    lesson.write_text(
        "title: L\nsummary: S\nsteps:\n  - loop:\n      variant: cross-attention\n"
        "      stage: weights\n      limit: 1\n",
        encoding="utf-8",
    )
    trace = run_variant("cross-attention")
    source = source_tokens(trace.tokens)
    assert source is not None
    status, out, err = attn("lesson", "run", str(lesson), "--plain")
    assert (status, err) == (0, "")
    status, _, err = attn(
        "lesson", "export", str(lesson), "--to", "md", "-o", str(tmp_path / "l.md")
    )
    assert (status, err) == (0, "")
    for text in (out, (tmp_path / "l.md").read_text(encoding="utf-8")):
        assert f"weights ({len(source)}: key):" in text
        assert " ".join(source) in " ".join(text.split())
