"""scripts/fact_check.py: the shipped lessons' tables recomputed in numpy, and the typed
numbers of their prose found among them.

The oracle itself is checked against the course notes' numbers (tests/data/seeds.py), not
against the tool; a planted false number and a stale typed number are reported. The whole
fact-check (every lesson) is ``python scripts/fact_check.py --all``; here a few lessons with
different variants run, to keep the suite fast.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from tests.data import seeds
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson, parse_lesson, shipped_dir
from tracer.plugin_host import PluginHost

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fact_check.py"


@pytest.fixture(scope="module")
def fact_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fact_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fact_check"] = module
    spec.loader.exec_module(module)
    return module


def test_the_oracle_gives_the_course_notes_numbers(fact_check: ModuleType) -> None:
    x = np.array(seeds.SEED_003_INPUTS)
    given = fact_check.Given(x, None, {}, {}, None)
    out = fact_check.vectorized(given)
    assert np.allclose(out["weights"]["weights"], seeds.SIMPLE_WEIGHTS, atol=1e-4)
    assert np.allclose(out["context"]["context"], seeds.SIMPLE_CONTEXT, atol=1e-4)
    assert np.allclose(fact_check.naive(given)["scores"]["scores"], seeds.SIMPLE_SCORES, atol=1e-4)


@pytest.mark.parametrize(
    "name", ["04_trainable_qkv", "07_multi_head", "12_cross_attention", "15_flash_backward"]
)
def test_a_shipped_lesson_says_nothing_false(
    fact_check: ModuleType, host: PluginHost, name: str
) -> None:
    lesson = load_lesson(shipped_dir() / f"{name}.yaml", host)
    runner = LessonRunner(lesson, host)
    try:
        report = fact_check.check(lesson, runner)
    finally:
        runner.close()
    assert report.tensors >= 4 and not report.without
    assert report.mismatches == [] and report.stale == []


STALE = """title: T
summary: S
steps:
  - show:
      variant: vectorized
      stage: weights
      caption: The weight of journey on Your is 0.1385, and on starts 0.3141.
"""


def test_a_planted_false_number_and_a_stale_typed_one_are_reported(
    fact_check: ModuleType, host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caption's first number is the course notes' weight (kept); its second is no weight
    of the table (stale). An oracle off by 0.01 in one cell is a false table."""
    assert abs(seeds.SIMPLE_WEIGHTS[1][0] - 0.1385) < 5e-5
    lesson = parse_lesson(STALE, "l.yaml", host)
    runner = LessonRunner(lesson, host)
    honest = fact_check.vectorized

    def off(given: object) -> dict[str, dict[str, np.ndarray]]:
        out = honest(given)
        out["weights"]["weights"][1, 0] += 0.01
        return out

    monkeypatch.setitem(fact_check.ORACLES, "vectorized", off)
    try:
        report = fact_check.check(lesson, runner)
    finally:
        runner.close()
    assert report.stale == ["0.3141"]
    assert (
        len(report.mismatches) == 1 and "vectorized.weights.weights[1, 0]" in report.mismatches[0]
    )


@pytest.mark.parametrize("hide", [False, True])
def test_the_backward_oracle_agrees_with_torch_autograd(fact_check: ModuleType, hide: bool) -> None:
    """The oracle's gradients (the softmax's Jacobian written out, central differences) are
    torch's own autograd's, for a loss Σ dO ∘ O with dO drawn at random, causal or not."""
    rng = np.random.default_rng(7)
    x = rng.uniform(size=(5, 3))
    wq, wk, wv = (rng.normal(size=(3, 2)) for _ in range(3))
    d_o = rng.normal(size=(5, 2))
    out = fact_check._backward_from(x, x @ wq, x @ wk, x @ wv, d_o, hide)
    xt, *ws = (torch.tensor(a, requires_grad=True) for a in (x, wq, wk, wv))
    q, k, v = (xt @ w for w in ws)
    scores = q @ k.T / 2**0.5
    if hide:
        scores = scores.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    weights.retain_grad()
    scores.retain_grad()
    (weights @ v * torch.tensor(d_o)).sum().backward()
    assert np.allclose(out["grad_scores"]["dS"], scores.grad.numpy(), atol=1e-9)
    assert np.allclose(out["grad_weights"]["dP"], weights.grad.numpy(), atol=1e-9)
    for name, w in zip(("dW_q", "dW_k", "dW_v"), ws, strict=True):
        assert np.allclose(out["grad_projections"][name], w.grad.numpy(), atol=1e-6)
    assert np.allclose(out["grad_inputs"]["dX"], xt.grad.numpy(), atol=1e-6)


def test_the_rotary_oracle_gives_the_papers_speeds(fact_check: ModuleType) -> None:
    """θᵢ = 10000^(−2i/8) falls tenfold per pair; YaRN at factor 4 over 2048 positions keeps
    pairs 0 and 1 (they turn 2048/2π and 204.8/2π > 32 times), interpolates pair 3 (under
    once) and puts pair 2 halfway between pair 1 and pair 3, with the factor 0.1 ln 4 + 1."""
    plain = fact_check._speeds(8, {})
    assert np.allclose(plain["theta"], [1, 0.1, 0.01, 0.001])
    yarn = fact_check._speeds(8, {"scaling": "yarn", "factor": 4})
    assert np.allclose(yarn["ramp"], [1, 1, 0.5, 0])
    assert np.isclose(float(yarn["temperature"]), 0.1 * np.log(4) + 1)
    assert np.allclose(yarn["theta"], [1, 0.1, 0.5 * 0.01 + 0.5 * 0.01 / 4, 0.001 / 4])


BACKWARD_LOOP = """title: T
summary: S
options: {seed: 123, init: rand, d_out: 2}
steps:
  - loop: {variant: backward, stage: grad_scores, limit: 2}
"""


def test_every_sub_step_of_a_loop_is_recomputed_and_a_planted_false_one_is_reported(
    fact_check: ModuleType, host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backward's rows of dS, sub-step by sub-step, agree with the oracle; an oracle off by
    0.01 in one cell of the second row's ds is one false table, named by its sub-step."""
    lesson = parse_lesson(BACKWARD_LOOP, "l.yaml", host)
    runner = LessonRunner(lesson, host)
    honest = fact_check.SUBSTEPS[("backward", "grad_scores")]

    def off(given: object, position: tuple[int, ...]) -> dict[str, np.ndarray]:
        out = dict(honest(given, position))
        if position == (1,):
            out["ds"] = out["ds"] + np.eye(1, out["ds"].size, 2).reshape(-1) * 0.01
        return out

    try:
        report = fact_check.Report(lesson.name)
        fact_check.check_loops(lesson, runner, report)
        assert report.mismatches == [] and report.tensors >= 2 * 9
        monkeypatch.setitem(fact_check.SUBSTEPS, ("backward", "grad_scores"), off)
        report = fact_check.Report(lesson.name)
        fact_check.check_loops(lesson, runner, report)
    finally:
        runner.close()
    assert len(report.mismatches) == 1
    assert report.mismatches[0].startswith("backward.grad_scores[1].ds[2]")
