"""A compare step's tables are drawn into their hidden panes while the learner reads the step
before or after it: moving there only shows them, and shows what drawing them then shows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_drawing import LessonDrawing
from tracer.tui.tensor_pane import TensorPane

from .conftest import LESSON, PLUGINS, lesson_running, settle

SIZE = (120, 40)


@contextmanager
def filled_panes() -> Iterator[list[str]]:
    """The ids of the tensor panes that tables are drawn into, while the block runs."""
    filled: list[str] = []
    show_stage = TensorPane.show_stage

    def counting(pane: TensorPane, *args: object, **kwargs: object) -> None:
        filled.append(str(pane.id))
        show_stage(pane, *args, **kwargs)  # type: ignore[arg-type]

    TensorPane.show_stage = counting  # type: ignore[method-assign]
    try:
        yield filled
    finally:
        TensorPane.show_stage = show_stage  # type: ignore[method-assign]


def compare_step(screen: object) -> int:
    steps = screen.session.steps  # type: ignore[attr-defined]
    return next(n for n, step in enumerate(steps) if step.kind == "compare")


async def screen_after_moving(*, ahead: bool, forward: bool) -> str:
    """The screen once the learner moved onto the compare step from the step before it
    (``forward``) or after it, its tables drawn ahead there or not."""
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, SIZE) as (pilot, screen):
        compare = compare_step(screen)
        screen.go_to_step(compare - 1 if forward else compare + 1)
        await settle(pilot)
        if ahead:
            screen.drawing.prepare_nearby()
            assert screen.drawing._ahead["compare"] is screen.session.step_view(compare)
        else:
            screen.drawing._ahead.clear()
        with filled_panes() as filled:
            screen.go_to_step(compare)  # the step before is a loop: → would go to its next pair
            await settle(pilot)
        assert screen.session.position.step == compare
        compared = {"compare-left", "compare-right", "compare-difference"}
        assert bool(compared & set(filled)) is not ahead  # drawn on the key only if not ahead
        return app.export_screenshot()


@pytest.mark.parametrize("forward", [True, False], ids=["from the step before", "coming back"])
async def test_a_compare_drawn_ahead_shows_what_drawing_it_on_the_key_shows(
    forward: bool,
) -> None:
    drawn_ahead = await screen_after_moving(ahead=True, forward=forward)
    drawn_on_the_key = await screen_after_moving(ahead=False, forward=forward)
    assert drawn_ahead == drawn_on_the_key


async def test_tables_drawn_ahead_for_other_answers_are_drawn_again() -> None:
    """What a step shows depends on the quizzes answered: tables drawn ahead are used only
    for the very view of the step they were drawn for."""
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, SIZE) as (pilot, screen):
        compare = compare_step(screen)
        screen.go_to_step(compare - 1)
        await settle(pilot)
        screen.drawing.prepare_nearby()
        assert "compare" in screen.drawing._ahead
        screen.session.step_views.clear()  # as an answer does: the step's view is made anew
        with filled_panes() as filled:
            screen.go_to_step(compare)
            await settle(pilot)
        assert {"compare-left", "compare-right", "compare-difference"} <= set(filled)
        assert not screen.drawing._ahead  # taken by the draw: a later visit fills them anew


async def test_nothing_is_drawn_ahead_into_panes_on_screen() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, SIZE) as (pilot, screen):
        compare = compare_step(screen)
        screen.go_to_step(compare)
        await settle(pilot)
        drawing: LessonDrawing = screen.drawing
        with filled_panes() as filled:
            drawing._draw_tables_ahead(screen.session.step_view(compare))
        assert not filled and not drawing._ahead
