"""A show's, a compare's or a quiz's tables are drawn into their hidden panes while the learner
reads the step before or after it: moving there only shows them, and shows what drawing them then
shows. Where both neighbours would be drawn into one pane, the one the learner is heading for is."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tracer.session.lesson import Position
from tracer.tui.app import TracerApp
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.steady import inside_shown
from tracer.tui.tensor_pane import TensorPane

from .conftest import PLUGINS, lesson_running, settle

SIZE = (120, 40)
AHEAD = """\
title: Tables drawn ahead
summary: A show, a compare and a quiz with tables, each between steps that hide their panes.
inputs: your-journey
steps:
  - narration: The tables of the next steps are drawn while you read this.
  - show: {variant: tiny, stage: scores, focus: {row: journey}}
  - compare:
      variant: tiny
      stage: weights
      query: journey
      left: {tensor: scores, then: [{normalize: 0}], label: divided by the sum}
      right: {tensor: weights, label: softmax}
  - quiz:
      id: biggest
      question: Which token is best aligned with "journey"?
      show: {variant: tiny, stage: scores}
      choices: [Your, journey, step]
      answer: journey
  - narration: A loop next, whose first sub-step is drawn while you read this.
  - loop: {variant: tiny, stage: scores, query: journey}
  - checkpoint:
      title: Done
      points: [Tables drawn ahead.]
"""
TENSORS = {"tensors", "tensors-second"}  # the two tensor panes, which trade places
PANES = {
    "show": TENSORS,
    "compare": {"compare-left", "compare-right", "compare-difference"},
    "quiz": TENSORS,
    "loop": TENSORS,
}


@contextmanager
def filled_panes() -> Iterator[list[str]]:
    """The ids of the tensor panes that tables are drawn into, while the block runs."""
    filled: list[str] = []
    show_stage, show_substep = TensorPane.show_stage, TensorPane.show_substep

    def counting(show: Callable[..., None]) -> Callable[..., None]:
        def shown(pane: TensorPane, *args: object, **kwargs: object) -> None:
            filled.append(str(pane.id))
            show(pane, *args, **kwargs)

        return shown

    TensorPane.show_stage = counting(show_stage)  # type: ignore[method-assign]
    TensorPane.show_substep = counting(show_substep)  # type: ignore[method-assign]
    try:
        yield filled
    finally:
        TensorPane.show_stage = show_stage  # type: ignore[method-assign]
        TensorPane.show_substep = show_substep  # type: ignore[method-assign]


def lesson_file(folder: Path, text: str) -> Path:
    """One of this module's lessons, written into ``folder``."""
    lesson = folder / "lesson.yaml"
    lesson.write_text(text, encoding="utf-8")
    return lesson


def lesson_app(lesson: Path) -> TracerApp:
    """The app on ``lesson`` from its start, with the test plugins."""
    return make_lesson_app(lesson, resume=False, plugin_dirs=[str(PLUGINS)])


def step_of(screen: LessonScreen, kind: str) -> int:
    assert screen.session is not None
    return next(n for n, step in enumerate(screen.session.steps) if step.kind == kind)


def prepare_once(screen: LessonScreen) -> None:
    """Draw ahead for the step on screen now, and not again after the next key (whose
    drawing is what a test counts)."""
    screen.drawing.prepare_nearby()
    screen.drawing.prepare_nearby = lambda: None  # type: ignore[method-assign]


async def step_once(pilot: Pilot[object], screen: LessonScreen, *, forward: bool) -> None:
    """One key on (``forward``) or back, and the frames it makes."""
    if forward:
        screen.step_next()
    else:
        screen.step_previous()
    await settle(pilot)


async def arrive(pilot: Pilot[object], screen: LessonScreen, step: int, *, forward: bool) -> None:
    """Onto ``step`` the way a learner heading that way comes: by a key from the step before
    it (``forward``) or after it, where there is one."""
    assert screen.session is not None
    start = step - 1 if forward else step + 1
    if 0 <= start < len(screen.session.steps):
        screen.go_to_step(start)
        await settle(pilot)
        await step_once(pilot, screen, forward=forward)
    else:
        screen.go_to_step(step)
        await settle(pilot)
    if screen.session.steps[step].kind == "loop":  # to the sub-step the next key leaves from
        if forward:
            screen.step_loop_end()
        else:
            screen.show(Position(step, 0))
        await settle(pilot)
    assert screen.session.position.step == step


async def screen_after_moving(
    lesson: Path, kind: str, *, ahead: bool, forward: bool, number: int | None = None
) -> str:
    """The screen once the learner moved onto the step of ``kind`` (step ``number``, or the
    first of that kind) from the step before it (``forward``) or after it, its tables drawn
    ahead there or not."""
    app = lesson_app(lesson)
    async with lesson_running(app, SIZE) as (pilot, screen):
        assert screen.session is not None
        target = step_of(screen, kind) if number is None else number
        assert screen.session.steps[target].kind == kind
        if not ahead:  # the screen draws ahead 50 ms after each frame (the first one too)
            screen.drawing._draw_tables_ahead = lambda shown, **_: None  # type: ignore[method-assign]
            for pane in (*screen.drawing.tensor_panes, *screen.drawing.compared):
                pane.drawn_ahead_for = None
        await arrive(pilot, screen, target - 1 if forward else target + 1, forward=forward)
        prepare_once(screen)
        with filled_panes() as filled:
            await step_once(pilot, screen, forward=forward)
        assert screen.session.position.step == target
        assert bool(PANES[kind] & set(filled)) is not ahead  # drawn on the key only if not ahead
        return app.export_screenshot()


@pytest.mark.parametrize("forward", [True, False], ids=["from the step before", "coming back"])
@pytest.mark.parametrize("kind", ["show", "compare", "quiz", "loop"])
async def test_tables_drawn_ahead_show_what_drawing_them_on_the_key_shows(
    tmp_path: Path, kind: str, forward: bool
) -> None:
    lesson = lesson_file(tmp_path, AHEAD)
    drawn_ahead = await screen_after_moving(lesson, kind, ahead=True, forward=forward)
    drawn_on_the_key = await screen_after_moving(lesson, kind, ahead=False, forward=forward)
    assert drawn_ahead == drawn_on_the_key


async def test_tables_drawn_ahead_for_other_answers_are_drawn_again(tmp_path: Path) -> None:
    """What a step shows depends on the quizzes answered: tables drawn ahead are used only
    for the very view of the step they were drawn for, and only once."""
    app = lesson_app(lesson_file(tmp_path, AHEAD))
    async with lesson_running(app, SIZE) as (pilot, screen):
        assert screen.session is not None
        compare = step_of(screen, "compare")
        screen.go_to_step(compare - 1)
        await settle(pilot)
        screen.drawing.prepare_nearby()
        panes = screen.drawing.compared
        assert all(pane.drawn_ahead_for is not None for pane in panes)
        screen.session.step_views.clear()  # as an answer does: the step's view is made anew
        with filled_panes() as filled:
            screen.step_next()
            await settle(pilot)
        assert PANES["compare"] <= set(filled)
        assert all(pane.drawn_ahead_for is None for pane in panes)  # a later visit draws anew


async def test_anything_else_shown_in_a_pane_drawn_ahead_is_drawn_over(tmp_path: Path) -> None:
    """A message shown in the pane meanwhile (a long job's progress) is not taken for the
    tables: the quiz draws them again."""
    app = lesson_app(lesson_file(tmp_path, AHEAD))
    async with lesson_running(app, SIZE) as (pilot, screen):
        quiz = step_of(screen, "quiz")
        screen.go_to_step(quiz - 1)
        await settle(pilot)
        screen.drawing.prepare_nearby()
        assert screen.drawing.pane.drawn_ahead_for is not None
        screen.drawing.pane.show_message("Running the variant…")
        with filled_panes() as filled:
            screen.step_next()
            await settle(pilot)
        assert "tensors" in filled


async def test_nothing_is_drawn_ahead_into_panes_on_screen(tmp_path: Path) -> None:
    app = lesson_app(lesson_file(tmp_path, AHEAD))
    async with lesson_running(app, SIZE) as (pilot, screen):
        assert screen.session is not None
        for kind in ("show", "compare", "quiz", "loop"):
            step = step_of(screen, kind)
            screen.go_to_step(step)
            await settle(pilot)
            loop = screen.session.loop_view_ahead(step, from_before=True)
            assert (loop is not None) is (kind == "loop")
            on_screen = {
                str(pane.id)
                for pane in screen.query(TensorPane).results(TensorPane)
                if pane.display and inside_shown(pane)
            }
            assert on_screen
            with filled_panes() as filled:
                screen.drawing._draw_tables_ahead(screen.session.step_view(step), loop=loop)
            assert not on_screen & set(filled), kind


@pytest.mark.parametrize("forward", [True, False], ids=["going on", "going back"])
async def test_the_step_the_learner_heads_for_is_drawn_ahead_where_both_need_one_pane(
    tmp_path: Path, forward: bool
) -> None:
    """The compare step hides the pane that the show before it and the quiz after it both
    draw into: it holds the tables of the one the learner is heading for."""
    app = lesson_app(lesson_file(tmp_path, AHEAD))
    async with lesson_running(app, SIZE) as (pilot, screen):
        assert screen.session is not None
        compare = step_of(screen, "compare")
        await arrive(pilot, screen, compare, forward=forward)
        prepare_once(screen)
        heading = step_of(screen, "quiz" if forward else "show")
        assert screen.drawing.pane.drawn_ahead_for is screen.session.step_view(heading)
        with filled_panes() as filled:
            await step_once(pilot, screen, forward=forward)
        assert screen.session.position.step == heading
        assert not TENSORS & set(filled)


TRADING = """\
title: Panes that trade places
summary: Steps with tables one after another, each drawn ahead into the pane behind.
inputs: your-journey
steps:
  - show: {variant: tiny, stage: scores}
  - show: {variant: tiny, stage: weights, focus: {row: journey}}
  - loop: {variant: tiny, stage: scores, query: journey}
  - show: {variant: tiny, stage: scores, focus: {cell: [journey, Your]}}
  - checkpoint:
      title: Done
      points: [Panes that trade places.]
"""


@pytest.mark.parametrize("forward", [True, False], ids=["going on", "coming back"])
@pytest.mark.parametrize(("number", "kind"), [(1, "show"), (2, "loop"), (3, "show")])
async def test_a_step_drawn_behind_the_pane_on_screen_is_shown_as_drawing_it_shows_it(
    tmp_path: Path, number: int, kind: str, forward: bool
) -> None:
    """Between two steps with tables, the pane on screen cannot be drawn into ahead: the
    step beside it is drawn into the second tensor pane, and the two trade places on the key."""
    lesson = lesson_file(tmp_path, TRADING)
    moved = {"kind": kind, "forward": forward, "number": number}
    drawn_ahead = await screen_after_moving(lesson, ahead=True, **moved)  # type: ignore[arg-type]
    drawn_on_the_key = await screen_after_moving(lesson, ahead=False, **moved)  # type: ignore[arg-type]
    assert drawn_ahead == drawn_on_the_key


@pytest.mark.parametrize("keeps", ["zoom", "focus"])
async def test_the_panes_do_not_trade_when_the_learner_changed_the_one_on_screen(
    tmp_path: Path, keeps: str
) -> None:
    """A zoom, or the keyboard in a table, stays with the pane on screen into the next step
    (as it did before there were two): that step is then drawn on the key, in that pane."""
    app = lesson_app(lesson_file(tmp_path, TRADING))
    async with lesson_running(app, SIZE) as (pilot, screen):
        await arrive(pilot, screen, 0, forward=True)
        prepare_once(screen)
        front = screen.drawing.pane
        assert screen.drawing.spare.drawn_ahead_for is not None
        if keeps == "zoom":
            front.toggle_zoom()
        else:
            front.view.focus()
        await settle(pilot)
        with filled_panes() as filled:
            screen.step_next()
            await settle(pilot)
        assert screen.drawing.pane is front and filled == [front.id]
