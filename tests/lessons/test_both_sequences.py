"""A token in both sequences of a cross-attention lesson ("cat" in the target and in the
source): the lesson's words, the learner's typed cells and the loop's legend must agree on
which sequence it names, so a name that could be either is never read as one silently.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests import forked
from tracer.lessons.grading import grade
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import parse_lesson
from tracer.lessons.model import Lesson, Quiz, TensorRef
from tracer.plugin_host import PluginHost
from tracer.render.labels import position_tokens

TARGET = ("le", "cat", "dort")
SOURCE = ("the", "dog", "cat", "sleeps")
""""cat" is token 1 of the target and token 2 of the source."""

LESSON = f"""title: T
summary: S
inputs:
  tokens: [{", ".join(TARGET)}]
  embeddings: [[0.2, 0.9, 0.1], [0.7, 0.3, 0.5], [0.4, 0.6, 0.8]]
  source:
    tokens: [{", ".join(SOURCE)}]
    embeddings:
      - [0.1, 0.2, 0.3, 0.4]
      - [0.8, 0.1, 0.6, 0.2]
      - [0.3, 0.9, 0.2, 0.7]
      - [0.5, 0.4, 0.9, 0.1]
options: {{seed: 123, init: rand, d_out: 2}}
steps:
  - quiz:
      id: pick
      question: Select the weight of the target's last token for every source key.
      cells: {{variant: cross-attention, stage: weights}}
      answer: {{variant: cross-attention, stage: weights, then: [{{compare: '> 0'}}]}}
  - quiz:
      id: weight
      question: How much weight does the target's "dort" give the source's "cat"?
      answer: {{variant: cross-attention, stage: weights, cell: [dort, cat]}}
      tolerance: 0.005
"""


@pytest.fixture(scope="module")
def lesson_runner(host_module: PluginHost) -> tuple[Lesson, LessonRunner]:
    lesson = parse_lesson(LESSON, "l.yaml", host_module)
    runner = LessonRunner(lesson, host_module)
    yield lesson, runner
    runner.close()


@pytest.fixture(scope="module")
def host_module() -> PluginHost:
    return PluginHost(use_env=False)


def test_a_typed_token_in_both_sequences_is_refused_in_one_line_naming_both(
    lesson_runner: tuple[Lesson, LessonRunner],
) -> None:
    lesson, runner = lesson_runner
    quiz = lesson.steps[0]
    assert isinstance(quiz, Quiz)
    answer = runner.answer(quiz)
    for typed in ("dort,cat", "cat,dog"):
        graded = grade(quiz, answer, typed)
        assert graded.right is None  # nothing recorded, nothing revealed: type again
        assert graded.message == (
            "'cat' is in both sequences: token 1 of the target and token 2 of the source "
            "(counted from 0); type the 0-based index of the one you mean"
        )
        assert "\n" not in graded.message
    # By index, or by a token of one sequence only, the cell is read as the table labels it.
    every = " ".join(f"{row},{key}" for row in range(3) for key in range(4))
    assert grade(quiz, answer, every).right is True
    named = " ".join(f"{t},{s}" for t in ("le", "1", "dort") for s in ("the", "dog", "2", "sleeps"))
    assert grade(quiz, answer, named).right is True


def test_lesson_check_warns_where_the_lesson_names_it(tmp_path: Path) -> None:
    path = tmp_path / "lesson.yaml"
    path.write_text(LESSON, encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    line = LESSON.splitlines().index(
        "      answer: {variant: cross-attention, stage: weights, cell: [dort, cat]}"
    )
    column = LESSON.splitlines()[line].index("cat]") + 1
    said = [text.replace(f"{path}:", "") for text in (result.stdout + result.stderr).splitlines()]
    assert any(
        text.startswith(f"{line + 1}:{column}:")
        and "'cat' is in both sequences: token 1 of the target and 2 of the source" in text
        and "a cell, a focus or a pick reads it on a key axis as the source's" in text
        for text in said
    ), said


def test_the_loops_legend_names_a_key_by_the_source(
    lesson_runner: tuple[Lesson, LessonRunner],
) -> None:
    """Key 2 of the loop's (target, source) matrix is the source's "cat", and target row 1
    is the target's "cat": each named from its own sequence."""
    lesson, runner = lesson_runner
    quiz = lesson.steps[1]
    assert isinstance(quiz, Quiz) and isinstance(quiz.answer, TensorRef)
    tokens = runner.tensor(quiz.answer).tokens
    assert position_tokens((1, 2), ("query", "key"), tokens) == ("cat", "cat")
    assert position_tokens((2, 1), ("query", "key"), tokens) == ("dort", "dog")


def test_a_lesson_cell_reads_it_on_the_key_axis_as_the_source_does(
    lesson_runner: tuple[Lesson, LessonRunner],
) -> None:
    """The quiz asks the weight "dort" (target 2) gives the source's "cat" (source 2); the
    lesson's cell [dort, cat] reads it there, where the table labels it and where a learner
    would type it, not at the target's "cat" (index 1, the source's "dog"). The weight is
    recomputed with numpy from the run's queries and keys."""
    lesson, runner = lesson_runner
    quiz = lesson.steps[1]
    assert isinstance(quiz, Quiz) and isinstance(quiz.answer, TensorRef)
    ref = quiz.answer
    q = runner.tensor(replace(ref, stage="queries", cell=None, cell_names=())).tensor.double()
    k = runner.tensor(replace(ref, stage="keys", cell=None, cell_names=())).tensor.double()
    scores = q.numpy() @ k.numpy().T / np.sqrt(k.shape[-1])
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    assert runner.cell_of(ref) == (2, SOURCE.index("cat"))
    assert abs(float(runner.answer(quiz)) - weights[2, 2]) < 1e-5  # type: ignore[arg-type]
    assert abs(weights[2, 2] - weights[2, 1]) > 1e-3  # the two readings differ


PICKED = """  - quiz:
      id: row
      question: Select the source keys "dort" gives more than a quarter of its weight.
      cells: {variant: cross-attention, stage: weights, then: [{pick: dort}]}
      answer: {variant: cross-attention, stage: weights, then: [{pick: dort}, {compare: '> 0.25'}]}
"""


def test_a_row_picked_over_the_source_takes_the_source_tokens_it_shows(
    host_module: PluginHost,
) -> None:
    """A cells quiz on the row of "dort" (a derived table over the source's keys) is typed
    with the labels that row shows: "cat" is the source's, the only "cat" it shows, not a
    token refused for being in both sequences. The row is recomputed with numpy."""
    lesson = parse_lesson(LESSON + PICKED, "l.yaml", host_module)
    runner = LessonRunner(lesson, host_module)
    try:
        quiz = lesson.steps[2]
        assert isinstance(quiz, Quiz) and isinstance(quiz.cells, TensorRef)
        ref = replace(quiz.cells, then=(), cell=None, cell_names=())
        q = runner.tensor(replace(ref, stage="queries")).tensor.double().numpy()
        k = runner.tensor(replace(ref, stage="keys")).tensor.double().numpy()
        scores = q @ k.T / np.sqrt(k.shape[-1])
        row = np.exp(scores[2]) / np.exp(scores[2]).sum()  # "dort", target token 2
        chosen = [SOURCE[i] for i in range(len(SOURCE)) if row[i] > 0.25]
        assert "cat" in chosen  # the case: a token of both sequences, chosen by the source's
        answer = runner.answer(quiz)
        assert grade(quiz, answer, "; ".join(chosen)).right is True
        others = [token for token in SOURCE if token not in chosen]
        assert grade(quiz, answer, "; ".join(others)).right is False
    finally:
        runner.close()


BY_AXIS = """  - show:
      variant: cross-attention
      stage: weights
      focus: {column: cat}
  - show:
      variant: cross-attention
      stage: weights
      focus: {row: cat}
  - quiz:
      id: picked
      question: How much weight does "dort" give the source's "cat"?
      answer: {variant: cross-attention, stage: weights, then: [transpose, {pick: cat}], cell: [dort]}
      tolerance: 0.005
"""


def test_a_focus_and_a_pick_read_it_by_the_axis_they_index(host_module: PluginHost) -> None:
    """A focus on the column "cat" of the (target, source) weights is the source's key 2; a
    focus on the row "cat" is the target's token 1; a pick of "cat" from the transposed
    weights, whose first axis is the source's keys, is the source's too, and is named so.
    The weights are recomputed with numpy from the run's queries and keys."""
    from tracer.lessons.lesson_runner import explain_steps
    from tracer.lessons.views import step_view

    lesson = parse_lesson(LESSON + BY_AXIS, "l.yaml", host_module)
    runner = LessonRunner(lesson, host_module)
    try:
        column, row = step_view(lesson, runner, 2).tables[0], step_view(lesson, runner, 3).tables[0]
        assert column.focus is not None and column.focus.column == SOURCE.index("cat") == 2
        assert row.focus is not None and row.focus.row == TARGET.index("cat") == 1
        quiz = lesson.steps[4]
        assert isinstance(quiz, Quiz) and isinstance(quiz.answer, TensorRef)
        ref = replace(quiz.answer, then=(), cell=None, cell_names=())
        q = runner.tensor(replace(ref, stage="queries")).tensor.double().numpy()
        k = runner.tensor(replace(ref, stage="keys")).tensor.double().numpy()
        scores = q @ k.T / np.sqrt(k.shape[-1])
        weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
        answer = float(runner.answer(quiz))  # type: ignore[arg-type]
        assert abs(answer - weights[2, 2]) < 1e-5 and abs(weights[2, 2] - weights[2, 1]) > 1e-3
        picked = runner.tensor(replace(quiz.answer, cell=None, cell_names=()))
        assert 'the key "cat"' in " ".join(explain_steps(picked))
    finally:
        runner.close()
