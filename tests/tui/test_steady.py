"""A key press is laid out once, and what that one pass draws is what a full layout draws.

``tracer.tui.steady`` skips the second layout pass Textual asks for when a pane's
size changes. These tests count layout passes (no clock: nothing here is timed)
and check, after every step of the test lesson and at three terminal sizes, that
laying the screen out once more moves no widget and changes no cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest
from textual._compositor import Compositor
from textual.pilot import Pilot
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from tracer.tracing.runner import TraceOptions
from tracer.tui import lesson_screen
from tracer.tui.app import TracerApp
from tracer.tui.explore_screen import ExploreScreen
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.source_view import SourceView, _highlighted, shown_lines
from tracer.tui.steady import inside_shown
from tracer.variant import SubStep

from .conftest import LESSON, PLUGINS, lesson_running, settle


@contextmanager
def counting(
    owner: type, name: str, counts: Callable[..., bool] = lambda *args, **kwargs: True
) -> Iterator[list[int]]:
    """Counts the calls of ``owner.name`` that ``counts`` (given the call's arguments) accepts,
    every call by default, while the block runs."""
    calls = [0]
    original = getattr(owner, name)

    def counted(self: object, *args: object, **kwargs: object) -> object:
        if counts(*args, **kwargs):
            calls[0] += 1
        return original(self, *args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield calls
    finally:
        setattr(owner, name, original)


def counting_layouts() -> AbstractContextManager[list[int]]:
    """Counts the screen's layout passes while the block runs."""
    return counting(Screen, "_refresh_layout")


def geometry(app: TracerApp) -> dict[str, object]:
    """Every visible widget's place on screen, keyed by its path in the DOM."""
    placed: dict[str, object] = {}
    for widget in app.screen.query("*").results(Widget):
        # On screen: a widget inside a hidden one may be drawn ahead meanwhile (a compare's
        # tables while the learner reads the step before it).
        if widget.display and inside_shown(widget) and widget.is_mounted:
            path = "/".join(
                f"{type(node).__name__}#{node.id}" for node in widget.ancestors_with_self
            )
            placed[f"{path}@{len(placed)}"] = (widget.region, widget.virtual_size)
    return placed


def picture(app: TracerApp) -> list[list[tuple[str, object]]]:
    """The composed screen, cell run by cell run: each row's text and style, as painted."""
    strips = app.screen._compositor.render_strips()
    return [[(segment.text, segment.style) for segment in strip] for strip in strips]


async def relaid_out_changes_nothing(app: TracerApp, pilot: object) -> None:
    before_places, before_picture = geometry(app), picture(app)
    app.screen.refresh(layout=True)
    for widget in app.screen.query("*").results(Widget):
        widget.refresh(layout=True)
    await settle(pilot)  # type: ignore[arg-type]
    assert geometry(app) == before_places
    assert picture(app) == before_picture


@pytest.mark.parametrize(
    "size", [(80, 24), (120, 40), (200, 60)], ids=["80x24", "120x40", "200x60"]
)
async def test_every_lesson_step_is_drawn_as_a_full_layout_draws_it(size: tuple[int, int]) -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, size) as (pilot, screen):
        for number in range(len(screen.session.lesson.steps)):
            screen.go_to_step(number)
            await settle(pilot)
            await relaid_out_changes_nothing(app, pilot)
        # And backwards, where each pane shrinks back from the step after it.
        for number in reversed(range(len(screen.session.lesson.steps) - 1)):
            screen.go_to_step(number)
            await settle(pilot)
            await relaid_out_changes_nothing(app, pilot)


async def test_a_change_of_step_kind_is_laid_out_once() -> None:
    """Narration (the whole width) to a show step (code beside a table) and back: each is
    one layout pass, where Textual alone lays out a second time after the panes resize."""
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        kinds = [step.kind for step in screen.session.lesson.steps]
        assert kinds[:2] == ["narration", "show"]
        for number in (1, 0):  # first visits: a scrollbar that appears is laid out on its own
            screen.go_to_step(number)
            await settle(pilot)
        for _ in range(2):
            for number in (1, 0):
                with counting_layouts() as passes:
                    screen.go_to_step(number)
                    await settle(pilot)
                assert passes[0] == 1, (number, passes[0])


async def into_the_loop(app: TracerApp, pilot: Pilot[int]) -> ExploreScreen:
    """Settle the explorer, then step to its loop's first sub-step."""
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, ExploreScreen) and screen.session is not None
    stepper = screen.session.stepper
    while not isinstance(stepper.get(screen.position), SubStep):
        await pilot.press("right")
        await settle(pilot)
    return screen


async def test_explorer_loop_sub_steps_are_not_laid_out() -> None:
    """Inside a loop only numbers change: no pane changes size, so no layout pass at all."""
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        await into_the_loop(app, pilot)
        await pilot.press("right")  # the loop's second sub-step: the panes have their sizes
        await settle(pilot)
        for _ in range(3):
            with counting_layouts() as passes:
                await pilot.press("right")
                await settle(pilot)
            assert passes[0] == 0


def counting_frames() -> AbstractContextManager[list[int]]:
    """Counts the frames the screen paints (full or partial) while the block runs."""
    return counting(Compositor, "render_update")


def counting_arrangements() -> AbstractContextManager[list[int]]:
    """Counts how often the screen's compositor arranges every widget (the map of all)."""
    return counting(
        Compositor, "_arrange_root", lambda root, size, visible_only=True: not visible_only
    )


async def test_every_key_of_a_first_walk_through_the_lesson_is_one_layout_and_one_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stepping forward through every step and sub-step, each seen for the first time: a
    step that brings the code back, a loop entered, the first quiz (its buttons), a ✓ that
    marks a step visited on the timeline, a step that moves the focus into a quiz or out of
    one (the footer then shows other keys): each is one layout (none inside a loop), one
    arrangement of the screen, and one frame. Textual alone paints a second frame for a scrollbar, a scroll to the marked lines,
    new buttons or a timeline marker, each asked for after the first frame; for a change of
    focus it repaints the whole screen, and lays the footer out again once its keys change
    (Textual's own footer took four layouts and five frames).

    What the screen draws ahead while the learner reads (a compare's tables into their hidden
    panes) is done between the keys: no layout and no frame."""
    monkeypatch.setattr(lesson_screen, "PREPARE_AFTER", 600.0)  # done below, between the keys
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        steps = screen.session.lesson.steps
        kinds = {step.kind for step in steps}
        assert {"narration", "show", "loop", "compare", "quiz", "checkpoint"} <= kinds
        seen: list[tuple[tuple[int, int], int, int, bool]] = []
        while screen.position.step < len(steps) - 1:
            before = (screen.position.step, screen.position.sub)
            focused = app.focused
            with (
                counting_layouts() as passes,
                counting_frames() as frames,
                counting_arrangements() as arranged,
            ):
                await pilot.press("right")
                await settle(pilot)
            where = (screen.position.step, screen.position.sub)
            assert where != before
            inside_a_loop = where[0] == before[0]
            seen.append((where, passes[0], frames[0], app.focused is not focused))
            assert passes[0] == (0 if inside_a_loop else 1), seen[-3:]
            assert frames[0] == 1, seen[-3:]
            # The layout pass arranges the screen once: no scrollbar sized in it, and no
            # lookup after it, arranges it all again (SteadyCompositor).
            assert arranged[0] == passes[0], (where, arranged[0])
            with counting_frames() as frames, counting_layouts() as passes:
                screen.drawing.prepare_nearby()
                await settle(pilot)
            assert (passes[0], frames[0]) == (0, 0), where  # what is drawn ahead is not shown
        # Into an unanswered quiz (its box or first choice takes the focus) and out of it: the
        # footer shows other keys, and the focus style is drawn, in that same frame.
        assert sum(moved for *_, moved in seen) >= 2, seen


async def test_stepping_through_a_lesson_highlights_no_source_file_anew() -> None:
    """The loading worker highlights (and maps) every file a step shows, in the theme's shade
    (a light one here: the default is dark), so no key press pays for it: the first show step
    took 10–20 ms more when it missed."""
    _highlighted.cache_clear()
    shown_lines.cache_clear()
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    app.theme = "textual-light"
    async with lesson_running(app) as (pilot, screen):
        prepared = shown_lines.cache_info()
        assert prepared.currsize > 0
        for number in range(len(screen.session.lesson.steps)):
            screen.go_to_step(number)
            await settle(pilot)
        assert shown_lines.cache_info().misses == prepared.misses
        assert shown_lines.cache_info().hits > prepared.hits


async def test_code_shown_again_after_a_page_without_it_shows_the_lines_that_ran() -> None:
    """A checkpoint hides the code; the show step after it scrolls its marked lines into view
    as the pane comes back, measured where the pane is drawn (a hidden pane keeps its last
    size but has no rows on screen to measure)."""
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, (80, 24)) as (pilot, screen):
        kinds = [step.kind for step in screen.session.lesson.steps]
        page = kinds.index("checkpoint")
        shown = page + 1
        assert kinds[shown] == "show"
        # A loop's code, then none, then code further down the file.
        for number in (kinds.index("loop"), page, shown):
            screen.go_to_step(number)
            await settle(pilot)
        source = screen.query_one("#source", SourceView)
        rows = [n for n, row in enumerate(source.rows) if row.number in source.marked]
        first, last = min(rows), max(rows)
        top, visible = int(source.scroll_offset.y), source._visible_rows()
        assert top <= first and last < top + visible  # in view
        assert top > 0  # the marked lines lie below the first screenful at this size


async def test_a_new_theme_keeps_the_mark_on_the_line_that_made_the_tensor() -> None:
    """The code is highlighted again in the new theme's shade, with its ◆ and its title."""
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("end")  # the last stage: its tensor was made by a marked line
        await settle(pilot)
        source = app.screen.query_one("#source", SourceView)

        def gutters() -> set[str]:
            return {source.render_line(y).text[:1] for y in range(source.size.height)}

        assert source.produced and "◆" in gutters()
        title = str(source.border_title)
        app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
        await settle(pilot)
        assert source.produced and "◆" in gutters()
        assert str(source.border_title) == title


async def test_a_loop_sub_step_repaints_only_the_source_rows_whose_mark_moved() -> None:
    """Inside a loop the ▶ moves by a line or two: only those rows are drawn again, and the
    screen is what a repaint of every widget draws."""
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await into_the_loop(app, pilot)
        source = screen.query_one("#source", SourceView)
        drawn: list[int] = []
        original = SourceView.render_line

        def counted(self: SourceView, y: int) -> Strip:
            if self is source:
                drawn.append(y)
            return original(self, y)

        moved = 0
        for _ in range(6):
            before = source.marked | source.produced
            drawn.clear()
            SourceView.render_line = counted  # type: ignore[method-assign]
            try:
                await pilot.press("right")
                await settle(pilot)
            finally:
                SourceView.render_line = original  # type: ignore[method-assign]
            changed = before ^ (source.marked | source.produced)
            rows = [n for n, row in enumerate(source.rows) if row.number in changed]
            if changed:
                moved += 1
            assert len(drawn) <= len(rows), (drawn, rows)
            painted = picture(app)
            for widget in app.screen.query("*").results(Widget):
                widget.refresh()
            await settle(pilot)
            assert picture(app) == painted
        assert moved > 0  # the walk did move the ▶
