"""Quizzes in the lesson app as a learner meets them: typed fast, pasted, on a small terminal.

What is checked is what reaches the answer box and what is on screen, at the size where the
trouble showed (80×24).
"""

from __future__ import annotations

import pytest
from textual import events
from textual.app import App
from textual.widgets import Input

from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen

from .conftest import LESSON, PLUGINS, settle

DOT_QUIZ = 5  # "What is the dot product of "Your" and "journey"?", no table below it
SELF_QUIZ = 9  # "What is the score of "journey" with itself?", below it the table it is about
EXPLANATIONS = {
    DOT_QUIZ: "0.2365 + 0.1305 + 0.5874 = 0.9544.",
    SELF_QUIZ: "The dot product of a vector with itself.",
}


def screen_rows(app: App[object]) -> list[str]:
    """The whole screen as drawn, one string a row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def at_quiz(pilot: object, step: int) -> Input:
    app = pilot.app  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, LessonScreen)
    screen.go_to_step(step)
    await settle(pilot)  # type: ignore[arg-type]
    field = screen.query_one("#quiz-input", Input)
    assert field.value == "" and app.focused is field  # arriving: the box waits for the answer
    return field


def lesson() -> App[int]:
    return make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])


@pytest.mark.parametrize("text", ["0.95", "0,95", ".5", "12.25"])
async def test_an_answer_typed_in_one_burst_lands_whole(text: str) -> None:
    app = lesson()
    async with app.run_test(size=(120, 40)) as pilot:
        field = await at_quiz(pilot, DOT_QUIZ)
        # As a terminal delivers fast typing: every key queued before the first is handled.
        for character in text:
            key = {".": "full_stop", ",": "comma"}.get(character, character)
            app.post_message(events.Key(key, character))
        await settle(pilot)
        assert field.value == text
        assert app.focused is field


async def test_a_paste_lands_whole_in_the_answer_box() -> None:
    app = lesson()
    async with app.run_test(size=(120, 40)) as pilot:
        field = await at_quiz(pilot, DOT_QUIZ)
        app.post_message(events.Paste("0.95"))
        await settle(pilot)
        assert field.value == "0.95" and app.focused is field
        app.post_message(events.Paste("12"))  # into the focused box: once, not twice
        await settle(pilot)
        assert field.value == "0.9512"


async def test_keys_that_are_not_an_answer_still_move_on() -> None:
    app = lesson()
    async with app.run_test(size=(120, 40)) as pilot:
        field = await at_quiz(pilot, DOT_QUIZ)
        screen = app.screen
        assert isinstance(screen, LessonScreen)
        await pilot.press("right")
        await settle(pilot)
        assert screen.position.step == DOT_QUIZ + 1 and field.value == ""


@pytest.mark.parametrize("step", [DOT_QUIZ, SELF_QUIZ])
async def test_at_80x24_the_explanation_is_on_screen_after_answering(step: int) -> None:
    app = lesson()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_quiz(pilot, step)
        for key in ("1", "enter"):
            await pilot.press(key)
            await settle(pilot)
        rows = screen_rows(app)
        assert any("✗ Not quite: you answered 1;" in row for row in rows)
        assert any(EXPLANATIONS[step] in row for row in rows)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_footer_is_not_cut(size: tuple[int, int]) -> None:
    app = lesson()
    async with app.run_test(size=size) as pilot:
        await at_quiz(pilot, DOT_QUIZ)
        footer = screen_rows(app)[-1]  # in the box: its keys, not q and ? (they type)
        assert "Esc Leave the box" in footer and "^p palette" in footer
        assert "Quit" not in footer and "Help" not in footer
        await pilot.press("escape")
        await settle(pilot)
        footer = screen_rows(app)[-1]
        assert "? Help" in footer and "^p palette" in footer


async def test_the_steps_beside_a_quiz_are_computed_ahead_again_once_it_is_answered() -> None:
    """Soon after a step is drawn the app computes the steps either side; once a quiz is
    answered they may show more, so they are computed again for the answers given now."""
    import asyncio

    from tracer.lessons.views import quiz_id
    from tracer.tui.lesson_screen import PREPARE_AFTER

    app = lesson()
    async with app.run_test(size=(120, 40)) as pilot:
        field = await at_quiz(pilot, DOT_QUIZ)
        screen = app.screen
        assert isinstance(screen, LessonScreen) and screen.session is not None
        session = screen.session
        await asyncio.sleep(PREPARE_AFTER * 3)
        await settle(pilot)
        assert (DOT_QUIZ + 1, frozenset()) in session.step_views  # before the answer
        field.value = "0.9544"
        await pilot.press("enter")
        await settle(pilot)
        answered = frozenset({quiz_id(DOT_QUIZ, session.steps[DOT_QUIZ])})  # type: ignore[arg-type]
        assert set(session.progress.answers) == answered
        await asyncio.sleep(PREPARE_AFTER * 3)
        await settle(pilot)
        assert (DOT_QUIZ + 1, answered) in session.step_views
        assert (DOT_QUIZ - 1, answered) in session.step_views


async def test_a_quiz_asked_again_leaves_labels_that_say_the_same_undrawn() -> None:
    """Coming back to a quiz tells its labels what they show already: they keep their text
    (not measured or drawn anew); a label with something new to say (the refusal of a
    response that is no answer) says it, and coming back again brings the hint back."""
    app = lesson()
    async with app.run_test(size=(120, 40)) as pilot:
        field = await at_quiz(pilot, DOT_QUIZ)
        screen = app.screen
        assert isinstance(screen, LessonScreen)
        labels = {name: screen.query_one(f"#quiz-{name}") for name in ("question", "hint")}
        shown = {name: label.content for name, label in labels.items()}  # type: ignore[attr-defined]
        screen.go_to_step(DOT_QUIZ + 1)  # a checkpoint
        await settle(pilot)
        screen.go_to_step(DOT_QUIZ)
        await settle(pilot)
        for name, label in labels.items():
            assert label.content is shown[name], name  # type: ignore[attr-defined]
        assert "dot product" in str(shown["question"])
        field.value = "abc"
        await pilot.press("enter")
        await settle(pilot)
        refused = labels["hint"].content  # type: ignore[attr-defined]
        assert str(refused).startswith("Not an answer")
        screen.go_to_step(DOT_QUIZ + 1)  # a checkpoint
        await settle(pilot)
        screen.go_to_step(DOT_QUIZ)
        await settle(pilot)
        assert str(labels["hint"].content) == str(shown["hint"])  # type: ignore[attr-defined]
        assert "Not an answer" not in "\n".join(screen_rows(app))
