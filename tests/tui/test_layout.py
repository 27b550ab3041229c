"""How the width is shared: the code that ran gets the room a small table does not need.

Widths are read from what the widgets draw (the table's numbers, the source's
lines), driven by Textual's pilot; nothing here is a pasted screen.
"""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from tracer.inputs import load_inputs
from tracer.tracing.runner import TraceOptions
from tracer.tui.app import TracerApp
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.lesson_screen import loop_position
from tracer.tui.source_view import SourceView
from tracer.tui.tensor_pane import TensorPane, loop_axes
from tracer.tui.text_pane import TextPane

from .conftest import LESSON, PLUGINS, lesson_running, press, settle

LONG = Path(__file__).parent / "inputs" / "tokens200.yaml"


def explore(variant: str = "tiny", **options: object) -> TracerApp:
    return make_explore_app(variant, TraceOptions(**options), [str(PLUGINS)])  # type: ignore[arg-type]


def lesson_app() -> TracerApp:
    return make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])


def drawn(source: SourceView) -> list[str]:
    """The text of every line the source pane draws now."""
    return [source.render_line(y).text for y in range(source.size.height)]


async def at_the_end(app: TracerApp) -> tuple[int, str, bool]:
    """At the variant's last stage (its weights): the source pane's width, the table's mode,
    and whether every column of the table's numbers fits its view."""
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        view = app.screen.query_one(TensorPane).view
        width = app.screen.query_one("#source", SourceView).outer_size.width
        return width, view.mode, view.numbers_width() <= view.size.width


async def test_a_small_table_leaves_the_code_more_room_than_a_large_one() -> None:
    # "wide" is tiny without its loop: the same tables, not 40,000 sub-steps to reach them.
    small, small_mode, small_fits = await at_the_end(explore("wide"))
    large, large_mode, _ = await at_the_end(explore("wide", inputs=load_inputs(str(LONG))))
    assert small > large
    # The 6×6 weights still show every number; the 200×200 ones keep the pane's usual room.
    assert small_mode == "numbers" and small_fits
    assert large_mode == "overview"
    assert large == round(120 * 0.45)


async def test_the_lines_that_ran_are_shown_whole_at_120x40() -> None:
    app = lesson_app()
    async with lesson_running(app) as (pilot, screen):
        screen.go_to_step(1)  # the 6×6 scores
        await settle(pilot)
        source = screen.query_one("#source", SourceView)
        assert source.path is not None and source.marked
        lines = Path(source.path).read_text(encoding="utf-8").splitlines()
        on_screen = drawn(source)
        for number in source.marked:
            line = lines[number - 1]
            # On one screen line, with its number: not wrapped, not cut.
            assert any(f"{number}  {line}" in text for text in on_screen), line
        assert screen.pane.view.mode == "numbers"


async def test_a_loop_step_writes_its_dot_product_on_one_line_at_120x40() -> None:
    app = lesson_app()
    async with lesson_running(app) as (pilot, screen):
        screen.go_to_step(2)
        await settle(pilot)
        detail = screen.pane.query_one("#tensor-detail", TextPane)
        longest = max(cell_len(line) for line in str(detail.render()).splitlines())
        assert detail.content_region.width >= longest
        source = screen.query_one("#source", SourceView)
        lines = Path(str(source.path)).read_text(encoding="utf-8").splitlines()
        on_screen = drawn(source)
        for number in source.marked:
            assert any(f"{number}  {lines[number - 1]}" in text for text in on_screen)


async def test_a_narrow_terminal_stacks_the_panes_full_width() -> None:
    app = lesson_app()
    async with lesson_running(app) as (pilot, screen):
        screen.go_to_step(1)
        await settle(pilot)
        source = screen.query_one("#source", SourceView)
        assert source.outer_size.width > round(120 * 0.45)
        await pilot.resize_terminal(90, 40)
        await settle(pilot)
        # One column: the code and the tensors each take the whole width.
        assert source.outer_size.width == 90
        assert screen.pane.outer_size.width == 90


async def test_a_narrow_quiz_gives_the_code_s_room_to_the_question_and_its_table() -> None:
    """Narrow: a quiz with a table hides the code; wide, the code stays beside the table. A
    terminal narrowed or widened on the quiz follows."""
    app = lesson_app()
    async with lesson_running(app) as (pilot, screen):
        steps = screen.session.lesson.steps
        show = next(n for n, step in enumerate(steps) if step.kind == "show")
        source = screen.query_one("#source", SourceView)
        for number, step in enumerate(steps):
            if step.kind != "quiz":
                continue
            screen.go_to_step(number)
            await settle(pilot)
            if screen.query_one("#left").display:  # a quiz with tables keeps the column
                break
        else:
            raise AssertionError("the test lesson has no quiz with tables")
        assert source.display and source.region.height > 0
        await pilot.resize_terminal(90, 40)
        await settle(pilot)
        assert source.region.height == 0  # hidden: display none
        screen.go_to_step(show)
        await settle(pilot)
        assert source.region.height > 0
        screen.go_to_step(number)
        await settle(pilot)
        assert source.region.height == 0
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        assert source.region.height > 0


async def test_at_80x24_a_loop_sub_step_keeps_its_arithmetic_whole() -> None:
    """Lesson 2's weighted sums: every line written out stays on screen; the tables scroll."""
    app = make_lesson_app("02_normalising", resume=False)
    async with lesson_running(app, (80, 24)) as (pilot, screen):
        assert screen.session is not None
        loop = next(n for n, s in enumerate(screen.session.lesson.steps) if s.kind == "loop")
        screen.go_to_step(loop)
        await settle(pilot)
        await press(pilot, "right")
        detail = screen.pane.query_one("#tensor-detail", TextPane)
        written = [line for line in str(detail.render()).splitlines() if line]
        assert any(" = " in line and "×" in line for line in written)
        region = detail.content_region
        drawn = [strip.text for strip in detail.render_lines(region.reset_offset)]
        for line in written:
            assert any(line in text for text in drawn), line


async def test_a_counted_loop_holds_the_height_of_its_tallest_position() -> None:
    """Whatever the width, the held height is exactly the tallest pair's, measured, not guessed."""
    # Widths from narrow to wide, each an odd one out; one app, resized, as a learner would.
    widths = (40, 43, 47, 63, 80, 101, 120, 157, 200, 53)
    app = lesson_app()
    async with lesson_running(app, (widths[0], 40)) as (pilot, screen):
        screen.go_to_step(2)
        await settle(pilot)
        for width in widths:
            await pilot.resize_terminal(width, 40)
            await settle(pilot)
            where = screen.query_one("#loop-position", TextPane)
            assert screen.session is not None
            shown = screen.session.view().loop
            assert shown is not None
            every = shown.at_hand(8)  # all eight pairs, counted while loading
            assert every is not None and len(every) == 8
            axes = loop_axes(shown.stage)  # the loop's matrix: its positions name tokens
            wrap = where.content_region.width
            tallest = max(
                len(loop_position(sub, n, 8, shown.tokens, axes).wrap(app.console, wrap))
                for n, sub in enumerate(every)
            )
            assert where.size.height == tallest, width
