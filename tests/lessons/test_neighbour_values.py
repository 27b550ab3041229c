"""A number quiz whose tolerance accepts another value of its answer's table
(:mod:`tracer.lessons.neighbour_values`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests import forked
from tracer.inputs.builtin import YOUR_JOURNEY
from tracer.lessons.guesses import tolerance_at
from tracer.lessons.neighbour_values import largest_tolerance, nearest_other


def test_the_nearest_other_value_is_found_as_a_learner_types_it() -> None:
    table = [(("Your",), 1.83218), (("starts",), 1.91775), (("step",), 1.92391)]
    found = nearest_other(1.92302, table)
    assert found is not None and (found.value, found.where) == (1.9239, "[step]")


def test_a_value_equal_to_the_answer_or_not_finite_is_no_other_value() -> None:
    # A symmetric table's transpose, dV's equal columns: the same number, so right.
    assert nearest_other(0.9313, [(("a", "b"), 0.93130001), (("c",), float("-inf"))]) is None
    found = nearest_other(0.9313, [(("a",), 0.93134), (("b",), 0.9501)])
    assert found is not None and found.where == "[b]"  # 0.9313 to 4 decimals: the same


@pytest.mark.parametrize(
    ("answer", "other", "largest"),
    [(1.92302, 1.9239, 0.0004), (0.23789, 0.2333, 0.002), (1.495, 1.4754, 0.009), (2.0, 3.0, 0.5)],
)
def test_the_largest_tolerance_keeps_every_response_nearer_the_answer(
    answer: float, other: float, largest: float
) -> None:
    suggested = largest_tolerance(answer, other)
    assert suggested == pytest.approx(largest)
    assert suggested < abs(other - answer) / 2 + 1e-12


def test_the_tolerance_value_is_found_where_it_is_written() -> None:
    source = [
        "steps:",
        "  - quiz:",
        "      question: q",
        "      tolerance: 0.005",
        "  - quiz:",
        "      tolerance: 1",
    ]
    assert tolerance_at(source, 2, 3) == (4, 18)
    assert tolerance_at(["  - quiz: {question: q, tolerance: 0.5}"], 1, 3) == (1, 36)
    assert tolerance_at(["  - quiz:", "      question: q", "  - show: x"], 1, 3) == (1, 3)


def _lesson(tmp_path: Path, tolerance: str) -> Path:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(
        "title: t\nsummary: s\ninputs: your-journey\nsteps:\n"
        "  - quiz:\n"
        "      question: What is the dot product of journey with itself?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [journey, journey]}\n"
        f"      tolerance: {tolerance}\n",
        encoding="utf-8",
    )
    return lesson


def test_lesson_check_warns_at_the_tolerance_value(tmp_path: Path) -> None:
    x = np.array(YOUR_JOURNEY.embeddings)
    scores = x @ x.T  # the oracle: every dot product of the embeddings
    answer = scores[1, 1]
    row_and_column = [scores[1, k] for k in range(6) if k != 1]
    nearest = min(row_and_column, key=lambda v: abs(v - answer))
    assert np.isclose(nearest, scores[1, 2])  # journey · starts, 0.0196 away

    lesson = _lesson(tmp_path, "0.05")
    result = forked.run_attn("lesson", "check", str(lesson))
    assert (result.returncode, result.stderr) == (0, "")
    lines = [line.replace(f"{lesson}:", "") for line in result.stdout.splitlines()]
    # journey · starts and starts · journey are the same number: either names it.
    assert lines[0] in {
        f"8:18: warning: tolerance 0.05 accepts {nearest:.4f}, the table's value at "
        f"[{cell}]; the answer is {answer:.4f}: use at most 0.009"
        for cell in ("journey, starts", "starts, journey")
    }
    assert len(lines) == 2


def test_a_tolerance_short_of_every_other_value_is_not_warned(tmp_path: Path) -> None:
    lesson = _lesson(tmp_path, "0.009")
    result = forked.run_attn("lesson", "check", str(lesson))
    assert (result.returncode, result.stderr) == (0, "")
    assert "warning" not in result.stdout


def test_a_tolerance_that_lets_a_guess_through_is_reported_once(tmp_path: Path) -> None:
    lesson = _lesson(tmp_path, "1.5")  # accepts 0 and 1, and every other dot product too
    result = forked.run_attn("lesson", "check", str(lesson))
    assert (result.returncode, result.stderr) == (1, "")  # the guess: a problem, refused
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and "accepts a guess" in lines[0] and "warning" not in lines[0]
