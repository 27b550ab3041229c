"""Lessons 08-11: they check clean, run headless, every live quiz matches an independent
oracle, and the claims their prose makes about the numbers hold."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from tests.variants.lesson_oracles import MODERN_ORACLES, PARTNER
from tests.variants.problems import HOST, trace
from tracer.lessons.check import check_lesson
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson, shipped_dir
from tracer.lessons.model import Lesson, TensorRef
from tracer.plugin_host import PluginHost
from tracer.render.text import format_number
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import SubStep

NAMES = ["08_windows_and_groups", "09_kv_cache", "10_online_softmax", "11_training"]


@pytest.fixture(scope="module")
def lessons(host: PluginHost) -> dict[str, Lesson]:
    return {name: load_lesson(shipped_dir() / f"{name}.yaml", host) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_checks_clean(name: str, lessons: dict[str, Lesson], host: PluginHost) -> None:
    assert check_lesson(lessons[name], host) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_live_quiz_matches_its_oracle(
    name: str, lessons: dict[str, Lesson], host: PluginHost
) -> None:
    runner = LessonRunner(lessons[name], host)
    live = [quiz for quiz in lessons[name].quizzes if isinstance(quiz.answer, TensorRef)]
    assert len(live) >= 2
    for quiz in live:
        expected = MODERN_ORACLES[(name, quiz.id or "")]()
        answer = float(runner.answer(quiz))
        assert answer == pytest.approx(float(expected), abs=5e-5), quiz.id
        assert runner.is_right(quiz, format_number(answer))
        assert not runner.is_right(quiz, format_number(answer + quiz.tolerance + 0.01))


@pytest.mark.parametrize("name", NAMES)
def test_runs_headless_in_a_pipe(name: str, attn: Callable[..., tuple[int, str, str]]) -> None:
    status, out, err = attn("lesson", "run", name, "--plain")
    assert (status, err) == (0, "")
    assert out.count("Quiz: ") == out.count("Answer: ") >= 2


def test_lesson_08_claims() -> None:
    window = trace("sliding-window").output
    masked = trace("masked").output
    # "The first three rows agree ... From 'with' on ... the rows differ."
    torch.testing.assert_close(window[:3], masked[:3])
    assert all(not torch.allclose(window[i], masked[i]) for i in range(3, 6))
    # "more than in causal attention" for step -> with.
    band = trace("sliding-window").stage("weights").tensors["weights"]
    assert band[5, 3] > trace("masked").stage("weights").tensors["weights"][5, 3]


def test_lesson_10_claims() -> None:
    # Naive softmax at 100x the scores: the row of journey has nan, torch.softmax has none.
    scaled = trace("trainable").stage("scaled").tensors["scaled"] * 100
    naive = scaled.exp() / scaled.exp().sum(dim=-1, keepdim=True)
    assert naive[1].isnan().any() and not torch.softmax(scaled, -1).isnan().any()
    # With randn weights, the last tile brings a larger maximum: rescale < 1 for every query.
    run = start_trace("online-softmax", TraceOptions(init="randn"), HOST)
    steps = [step for step in run if isinstance(step, SubStep)]
    last = steps[-1].tensors
    assert bool((last["m"] > last["m_old"]).all()) and bool((last["rescale"] < 1).all())


def test_lesson_11_claims() -> None:
    run = trace("training")
    losses = run.stage("steps").tensors["loss"]
    assert bool((losses[1:] < losses[:-1]).all())  # "It falls at every step."
    weights = run.stage("weights").tensors
    before, after = weights["before"], weights["after"]
    rows = torch.arange(6)
    gained = after[rows, PARTNER] - before[rows, PARTNER]
    assert int((gained > 0).sum()) >= 4  # "Most rows now put more weight on their partner"
    assert int(gained.argmax()) == 5  # "the row of 'step' ... most of all"
    assert abs(float(before[5, 0]) - 1 / 6) < 0.02  # "'Your' got about a sixth"
    assert float((after[1] - after[2]).abs().max()) < 0.05  # journey's and starts' rows stay close
