"""A cells quiz's answer ("which cells will the causal mask hide?") is drawn on no other
screen while the quiz is unanswered, before it or after it (:mod:`tracer.lessons.hiding`):
the mask itself, and a table whose zero or masked cells are those cells, read "?" whole,
with a legend that says why; a table that tells nothing of them is drawn as it is; once
the quiz is answered, everything is drawn again.

The mask is numpy's (a 1 wherever the key comes after the query), never the walk's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tracer.lessons.hiding import Why, hidden_legend
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import parse_lesson
from tracer.lessons.model import Lesson
from tracer.lessons.views import step_view
from tracer.plugin_host import PluginHost
from tracer.session.lesson import start_session
from tracer.text.plain_lesson import plain_lines

TOKENS = 6
FUTURE = np.triu(np.ones((TOKENS, TOKENS)), k=1)
"""The cells the quiz asks for: the key after the query."""

LESSON = """title: t
summary: s
inputs: your-journey
steps:
  - show: {variant: masked, stage: weights}
  - quiz:
      id: future
      question: Which cells will the causal mask hide?
      cells: {variant: masked, stage: scaled}
      answer: {variant: masked, stage: mask}
  - show: {variant: masked, stage: mask}
  - show: {variant: vectorized, stage: weights}
"""

LEGEND = (
    "(? = hidden until the quiz at step 2 is answered: a table whose cells would show which "
    "cells its answer picks (where they are))"
)


@pytest.fixture
def lesson(host: PluginHost) -> Lesson:
    return parse_lesson(LESSON, "l.yaml", host)


def every_cell(rows: int, columns: int) -> frozenset[tuple[int, int]]:
    return frozenset((r, c) for r in range(rows) for c in range(columns))


def test_the_mask_and_the_tables_zeroed_there_read_question_marks_until_answered(
    lesson: Lesson, host: PluginHost
) -> None:
    runner = LessonRunner(lesson, host)
    try:
        (mask,) = step_view(lesson, runner, 2, frozenset()).tables
        assert np.array_equal(mask.resolved.tensor.double().numpy(), FUTURE)
        assert mask.hidden == every_cell(TOKENS, TOKENS)  # not only the 1s: they would draw it
        assert mask.why == (Why("cells", 1),)
        assert hidden_legend([mask]) == LEGEND
        assert mask.legend is None  # no range: it would say 0 and 1 are there
        # Before the quiz: the causal weights are 0 exactly where the mask holds its 1s.
        weights = step_view(lesson, runner, 0, frozenset()).tables[0]
        drawn = weights.resolved.tensor.double().numpy()
        assert np.array_equal(drawn == 0, FUTURE == 1)
        assert weights.hidden == every_cell(TOKENS, TOKENS)
        # Unmasked weights tell nothing of the mask: drawn as they are.
        (plain,) = step_view(lesson, runner, 3, frozenset()).tables
        assert (plain.resolved.tensor.double().numpy() != 0).all()
        assert plain.hidden == frozenset()
        # Answered: everything is drawn.
        for number in (0, 2, 3):
            assert all(not t.hidden for t in step_view(lesson, runner, number, {"future"}).tables)
    finally:
        runner.close()


def test_a_learner_who_skips_the_quiz_and_comes_back(lesson: Lesson, host: PluginHost) -> None:
    """The session (the app, ``-i``, serve): → past the quiz, the mask reads "?"; back at the
    quiz and answered, the mask shows."""
    session = start_session(lesson, host, Path("l.yaml"))
    session.attach(None)
    try:
        session.go_to(2)
        assert session.view().tables[0].hidden == every_cell(TOKENS, TOKENS)
        session.go_to(1)
        cells = "; ".join(f"{r},{c}" for r in range(TOKENS) for c in range(TOKENS) if FUTURE[r, c])
        assert session.answer(cells).right
        session.go_to(2)
        assert session.view().tables[0].hidden == frozenset()
    finally:
        session.close()


def test_read_top_to_bottom_the_answer_follows_the_quiz(lesson: Lesson, host: PluginHost) -> None:
    """``--plain`` prints each quiz's answer after it: the weights before it read "?", the
    mask after it is drawn."""
    text = "\n".join(plain_lines(lesson, host))
    before, _, after = text.partition("--- Step 3")
    assert LEGEND in before
    assert "?" not in after.partition("--- Step 4")[0]
