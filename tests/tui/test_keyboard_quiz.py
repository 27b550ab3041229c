"""Quizzes answered by keyboard alone, as a learner types them.

The tokens are made of the letters the lesson's keys use (q quits, z zooms, w, a, e, t, n,
p, i, space), so a cells answer typed with them reaches the box whole only if no key
binding takes a letter. The right cells come from the inputs below: the embeddings are the
rows of the identity, so the scores X Xᵀ are 1 on the diagonal and 0 elsewhere, and the
cells above 0.5 are the three (token, same token) pairs.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static

from tracer.session.lesson import open_lesson
from tracer.text.interactive import Interactive
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.quiz_view import QuizView

from .conftest import PLUGINS, lesson_running, settle

TOKENS = ("quiet", "zone", "wasp")
CELLS = "quiet,quiet; zone,zone; wasp,wasp"
"""The right selection, typed as a learner would (letters, a space after each ';')."""

LESSON = """\
title: Keyboard quizzes
summary: One quiz of each kind, answered by keys alone.
inputs: letters.yaml
steps:
  - narration: Before the quizzes.
  - quiz:
      id: one
      question: Which token is the second one?
      choices: [quiet, zone, wasp]
      answer: zone
  - quiz:
      id: several
      question: Which tokens start with a consonant other than z?
      choices: [quiet, zone, wasp]
      answer: [quiet, wasp]
  - quiz:
      id: cells
      question: Which scores are above 0.5?
      cells: {variant: tiny, stage: scores}
      answer: {variant: tiny, stage: scores, then: [{compare: '> 0.5'}]}
  - narration: After the quizzes.
"""


def write_lesson(folder: Path) -> Path:
    rows = [[1 if i == j else 0 for j in range(3)] for i in range(3)]
    (folder / "letters.yaml").write_text(
        f"tokens: [{', '.join(TOKENS)}]\nembeddings: {rows}\n", encoding="utf-8"
    )
    path = folder / "keys.yaml"
    path.write_text(LESSON, encoding="utf-8")
    return path


def labels(view: QuizView) -> list[str]:
    return [
        str(button.label)
        for button in view.query("#quiz-choices Button").results(Button)
        if button.display
    ]


def feedback(view: QuizView) -> str:
    return str(view.query_one("#quiz-feedback", Static).content)


def footer(screen: LessonScreen) -> str:
    return [strip.text for strip in screen._compositor.render_strips()][-1]


async def press(pilot: Pilot[int], *keys: str) -> None:
    """Keys as typed, then a wait until the app is idle (quiz steps start no worker)."""
    await pilot.press(*keys)
    await settle(pilot)  # type: ignore[arg-type]


async def test_every_quiz_is_answered_by_keys_and_marks_survive_stepping_away(
    tmp_path: Path,
) -> None:
    app = make_lesson_app(write_lesson(tmp_path), plugin_dirs=[str(PLUGINS)], resume=False)
    async with lesson_running(app) as (pilot, screen):
        view = screen.query_one(QuizView)
        session = screen.session
        assert session is not None

        # One answer: the first choice has the focus, visibly; ↓ moves it, Space only marks.
        await press(pilot, "right")
        first, second = (view.query_one(f"#choice-{n}", Button) for n in (1, 2))
        assert app.focused is first
        assert first.styles.background != second.styles.background  # the focus shows
        assert "Space Mark" in footer(screen) and "Check" in footer(screen)
        await press(pilot, "down", "space")
        assert app.focused is second
        assert labels(view) == ["( ) 1. quiet", "(•) 2. zone", "( ) 3. wasp"]
        assert feedback(view) == "" and session.recorded() is None  # marked, not answered
        # Away and back: the mark is there, and the focus is on it; Enter answers it.
        await press(pilot, "right", "left")
        assert labels(view) == ["( ) 1. quiet", "(•) 2. zone", "( ) 3. wasp"]
        assert app.focused is second
        await press(pilot, "enter")
        assert feedback(view).startswith("✓ Right: zone")

        # Several right: Space marks each, the marks survive a step away, Enter checks them.
        await press(pilot, "right")
        assert app.focused is view.query_one("#choice-1", Button)
        await press(pilot, "enter")  # nothing marked yet: refused, nothing revealed
        assert feedback(view) == "" and session.recorded() is None
        await press(pilot, "space", "down", "down", "space")
        assert labels(view) == ["[x] 1. quiet", "[ ] 2. zone", "[x] 3. wasp"]
        await press(pilot, "left", "right")
        assert labels(view) == ["[x] 1. quiet", "[ ] 2. zone", "[x] 3. wasp"]
        await press(pilot, "enter")
        assert feedback(view).startswith("✓ Right: quiet, wasp")

        # Cells: the box has the focus and takes every letter, however the lesson binds it.
        await press(pilot, "right")
        field = view.query_one("#quiz-input", Input)
        assert app.focused is field
        assert "Esc Leave the box" in footer(screen) and "→ Next (box empty)" in footer(screen)
        assert "Quit" not in footer(screen) and "Zoom" not in footer(screen)  # z, q: letters
        half, rest = CELLS[:17], CELLS[17:]  # "quiet,quiet; zone" | ",zone; wasp,wasp"
        await press(pilot, *half)
        assert field.value == half and session.position.step == 3
        # Esc leaves the box, then → steps on; back, the text is there and the box has the focus.
        await press(pilot, "escape", "right")
        assert session.position.step == 4
        await press(pilot, "left")
        assert field.value == half and app.focused is field
        await press(pilot, *rest, "enter")
        assert feedback(view).startswith("✓ Right")
        answer = session.recorded()
        assert answer is not None and answer.right and answer.response == CELLS
        assert session.drafts == {}  # every quiz answered: nothing left unchecked


def test_the_same_answers_typed_in_the_plain_front_end_are_graded_alike(tmp_path: Path) -> None:
    session = open_lesson(write_lesson(tmp_path), plugin_dirs=[str(PLUGINS)])
    session.attach(None)
    lines = ["", "b", "", "a, c", "", CELLS, "", ""]  # each answer, then Enter moves on
    out = io.StringIO()
    Interactive(session, io.StringIO("\n".join(lines) + "\n"), out).run()
    session.close()
    printed = out.getvalue()
    assert "Right: b) zone." in printed and "Right: a), c) quiet, wasp." in printed
    assert f"Right: {CELLS}." in printed and "Not quite" not in printed
    answer = session.progress.answers["cells"]
    assert answer.right and answer.response == CELLS


@pytest.mark.parametrize("by_the_key", [True, False], ids=["when-shown", "while-reading"])
async def test_a_choice_that_lost_the_focus_while_hidden_is_drawn_unfocused_when_back(
    tmp_path: Path, by_the_key: bool
) -> None:
    """Leaving a quiz takes the focus from a choice while the quiz is hidden; its restyle waits
    (done while the learner reads the next step, or at the latest before the frame that shows
    the quiz again): the choice looks like the other choices that have no focus, and the
    screen like a fresh restyle."""
    app = make_lesson_app(write_lesson(tmp_path), plugin_dirs=[str(PLUGINS)], resume=False)
    async with lesson_running(app) as (pilot, screen):
        view = screen.query_one(QuizView)
        await press(pilot, "right", "down")
        first, second, third = (view.query_one(f"#choice-{n}", Button) for n in (1, 2, 3))
        assert app.focused is second
        focused_look = second.styles.background
        prepare = screen.drawing.prepare_nearby
        screen.drawing.prepare_nearby = lambda: None  # type: ignore[method-assign]
        await press(pilot, "left")  # to the narration: the quiz is hidden, its focus gone
        assert app.focused is None
        assert second._restyle_due  # put off: no one sees it
        if not by_the_key:
            prepare()  # what the screen runs while the learner reads
            assert not second._restyle_due
            assert second.styles.background == third.styles.background != focused_look
        screen.drawing.prepare_nearby = prepare  # type: ignore[method-assign]
        await press(pilot, "right")
        assert app.focused is first
        assert not second._restyle_due
        assert second.styles.background == third.styles.background != focused_look
        drawn = [strip.text for strip in screen._compositor.render_strips()]
        for widget in (first, second, third):
            app.update_styles(widget)
        await settle(pilot)
        assert [strip.text for strip in screen._compositor.render_strips()] == drawn
