"""Widgets hand back their kept rows only while those are what Textual would draw.

The oracle is Textual's own drawing of the widget from an empty cache, taken
after each change a widget can see: a new step, a hover, a new theme.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from rich.style import Style
from rich.text import Text
from textual.geometry import Offset, Region
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from tracer.tui.kept import Kept
from tracer.tui.launch import make_lesson_app
from tracer.tui.source_view import SourceView
from tracer.tui.steady import SteadyScrollBar
from tracer.tui.tensor_pane import TableTitle
from tracer.tui.tensor_view import TensorView
from tracer.tui.text_pane import TextPane
from tracer.tui.timeline import TimelineItem

from .conftest import LESSON, PLUGINS, app_with, lesson_running, seen_cells, settle
from .test_backdrop import rows, textual_draws, textual_strips, whole


def kept_rows_match(screen: Widget) -> int:
    """Compare every kept widget on screen with Textual's drawing; how many were compared."""
    compared = 0
    for widget in screen.query("*").results(Kept):
        if not widget.display or widget.region.area == 0:
            continue
        assert rows(widget.render_lines(whole(widget))) == textual_draws(widget), (
            f"{type(widget).__name__}#{widget.id}"
        )
        compared += 1
    for widget in screen.query("*"):  # scrollbars are not in the query: their views hold them
        for bar in (widget._vertical_scrollbar, widget._horizontal_scrollbar):
            if isinstance(bar, SteadyScrollBar) and bar.display and bar.region.area:
                assert rows(bar.render_lines(whole(bar))) == textual_draws(bar), widget.id
                compared += 1
    return compared


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_kept_rows_are_textuals_after_every_step_a_hover_and_a_theme(theme: str) -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        app.theme = theme
        await settle(pilot)
        compared = 0
        steps = len(screen.session.lesson.steps)
        # Forward, then back: each widget shows again what it showed before.
        for number in [*range(steps), *range(steps - 2, -1, -1)]:
            screen.go_to_step(number)
            await settle(pilot)
            compared += kept_rows_match(screen)
            if number == 2:  # a hovered timeline item is underlined: drawn anew
                item = screen.query(TimelineItem).results(TimelineItem).__next__()
                await pilot.hover(item)
                await settle(pilot)
                assert item.mouse_hover
                compared += kept_rows_match(screen)
                source = screen.query_one("#source", SourceView)  # its bar, in its hover colour
                await pilot.hover(source, offset=(source.size.width - 1, 1))
                await settle(pilot)
                assert source.vertical_scrollbar.mouse_over
                compared += kept_rows_match(screen)
                await pilot.hover(screen.pane)
                await settle(pilot)
            if number == 1:  # a scrolled view draws its new rows
                source = screen.query_one("#source", SourceView)
                top = source.scroll_offset.y
                target = top + 2 if top + 2 <= source.max_scroll_y else top - 2
                source.scroll_to(y=target, animate=False, immediate=True)
                await settle(pilot)
                assert source.scroll_offset.y == target
                compared += kept_rows_match(screen)
        app.theme = "textual-light" if theme == "textual-dark" else "textual-dark"
        await settle(pilot)
        compared += kept_rows_match(screen)
        assert compared > 10 * len(screen.session.lesson.steps)


async def test_a_step_draws_only_the_timeline_items_whose_state_changed() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        items = list(screen.query(TimelineItem).results(TimelineItem))
        assert len(items) > 5
        drawn: list[TimelineItem] = []
        original = Widget.render_lines

        def counted(self: Widget, crop: object) -> object:
            if isinstance(self, TimelineItem):
                drawn.append(self)
            return original(self, crop)  # type: ignore[arg-type]

        screen.go_to_step(1)
        await settle(pilot)
        Widget.render_lines = counted  # type: ignore[method-assign,assignment]
        try:
            screen.go_to_step(2)
            await settle(pilot)
        finally:
            Widget.render_lines = original  # type: ignore[method-assign]
        # Step 1 current -> visited, step 2 not visited -> current; Textual draws those two.
        assert sorted(item.key for item in drawn) == ["1", "2"]


def textual_draws_lines(widget: Widget) -> list[list[tuple[str, Style]]]:
    """``widget``'s rows drawn by Textual's own line drawing (``Widget.render_line``, from
    its ``render``), not the widget's override, from an empty cache."""
    widget.render_line = partial(Widget.render_line, widget)  # type: ignore[method-assign]
    try:
        return [seen_cells(strip) for strip in textual_strips(widget)]
    finally:
        del widget.render_line


@pytest.mark.parametrize("size", [(120, 40), (70, 24)])
async def test_table_titles_draw_what_textual_draws(size: tuple[int, int]) -> None:
    """A table title draws its own row (and keeps it): the same cells as Textual's drawing
    of its text, at every step, cut to a narrow width, and after a new theme."""
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, size) as (pilot, screen):
        compared = 0
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            for number in range(len(screen.session.lesson.steps)):
                screen.go_to_step(number)
                await settle(pilot)
                for title in screen.query(TableTitle).results(TableTitle):
                    if title.display and title.region.area:
                        ours = [seen_cells(strip) for strip in title.render_lines(whole(title))]
                        assert ours == textual_draws_lines(title), str(title.content)
                        compared += 1
        assert compared >= 8


async def test_a_scrollbar_puts_a_new_look_together_as_textual_draws_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bar at a place it was never drawn at is put together from the renderer's runs (track,
    thumb, the thumb's ends) in the bar's style, and is what Textual draws there: at every
    eighth of a row of scrolling, in its hover colour, and after a new theme."""
    from textual.scrollbar import ScrollBar

    path = tmp_path / "long.py"
    path.write_text("".join(f"value_{n} = {n}\n" for n in range(200)), encoding="utf-8")

    by_textual = 0
    textual_rows = ScrollBar.render_lines

    def counted(bar: ScrollBar, crop: Region) -> list[Strip]:
        nonlocal by_textual
        by_textual += 1
        return textual_rows(bar, crop)

    monkeypatch.setattr(ScrollBar, "render_lines", counted)
    app = app_with(lambda: SourceView(id="source"))
    async with app.run_test(size=(60, 20)) as pilot:
        source = app.query_one(SourceView)
        source.show_file(str(path))
        await settle(pilot)
        bar = source.vertical_scrollbar
        assert isinstance(bar, SteadyScrollBar)
        looks = 0
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await settle(pilot)
            for hover in (False, True):
                bar.mouse_over = hover
                for eighths in range(0, 8 * source.max_scroll_y + 1, 7):
                    bar.position = eighths / 8
                    assert rows(bar.render_lines(whole(bar))) == textual_draws(bar)
                    looks += 1
        assert looks > 100
        # Textual drew the bar once in each theme (its rows checked there); every other look,
        # hovered or not, was put together.
        assert by_textual <= 3


async def test_a_row_handed_back_again_is_framed_once_and_drawn_as_textual_draws_it() -> None:
    """The blank rows below a table: one framed row (and so one filtered row), each of them
    what Textual draws."""
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        views: list[TensorView] = []
        for number in range(len(screen.session.lesson.steps)):  # the first step with a table
            screen.go_to_step(number)
            await settle(pilot)
            views = [
                view
                for view in screen.pane.query(TensorView).results(TensorView)
                if view.display and view.region.area and view.grid is not None
            ]
            if views:
                break
        view = views[0]
        assert view.grid is not None and view.region.height > view.grid.rows + 2  # blank rows
        view._kept = None
        view._styles_cache.clear()
        strips = view.render_lines(whole(view))
        assert rows(strips) == textual_draws(view)
        below = strips[view.grid.rows + 1 :]
        assert len(below) >= 2 and all(strip is below[0] for strip in below)


async def test_a_text_pane_told_its_text_again_keeps_its_rows_and_counts_lines_at_a_new_width() -> (
    None
):
    app = app_with(lambda: TextPane(id="pane"))
    async with app.run_test(size=(40, 10)) as pilot:
        pane = app.query_one(TextPane)
        words = "one two three four five six seven eight nine ten eleven twelve"
        pane.show(Text(words, style="bold"))
        await pilot.pause()
        shown, rows_before = pane.content, pane.render_lines(whole(pane))
        assert pane.line_count == 2
        pane.show(Text(words, style="bold"))  # the same again: nothing to draw
        assert pane.content is shown
        assert pane.render_lines(whole(pane)) is rows_before  # the kept rows, not drawn anew
        pane.show(Text(words))  # another style is news
        assert pane.content is not shown
        await pilot.pause()
        assert rows(pane.render_lines(whole(pane))) == textual_draws(pane)
        again = pane.content
        await pilot.resize_terminal(20, 10)
        await pilot.pause()
        pane.show(Text(words))
        assert pane.content is again and pane.line_count == 4  # counted at the new width


async def test_a_text_shown_again_is_its_remembered_drawing_until_a_change_draws_anew() -> None:
    """Back on a text it drew before, a pane hands back that drawing (what Textual draws);
    a colour set in code, a text selection and a restyle are drawn anew, and a pane hidden
    and shown again (a change of display only) still remembers."""
    app = app_with(lambda: TextPane(id="pane"))
    async with app.run_test(size=(40, 10)) as pilot:
        pane = app.query_one(TextPane)
        first, second = Text("the first step's text"), Text("the second", style="italic")
        pane.show(first)
        await pilot.pause()
        drawn_first = pane.render_lines(whole(pane))
        pane.show(second)
        await pilot.pause()
        drawn_second = pane.render_lines(whole(pane))
        assert rows(drawn_second) != rows(drawn_first)
        pane.show(first)  # back: the very rows drawn for it
        await pilot.pause()
        assert pane.render_lines(whole(pane)) is drawn_first
        assert rows(drawn_first) == textual_draws(pane)

        pane.display = False  # display and size draw nothing in it: still remembered
        await pilot.pause()
        pane.display = True
        pane.show(second)
        await pilot.pause()
        assert pane.render_lines(whole(pane)) is drawn_second

        pane.styles.color = "red"  # a colour set in code: drawn anew, as Textual draws it
        pane.show(first)
        await pilot.pause()
        red = pane.render_lines(whole(pane))
        assert red is not drawn_first and rows(red) == textual_draws(pane)
        assert rows(red) != rows(drawn_first)

        selected = Selection.from_offsets(Offset(0, 0), Offset(3, 0))  # a selection: drawn anew
        pane.screen.selections = {pane: selected}
        await pilot.pause()
        assert pane.text_selection == selected
        assert pane.render_lines(whole(pane)) is not red
        pane.screen.selections = {}
        await pilot.pause()
        assert pane.render_lines(whole(pane)) is red  # no selection: the red drawing

        pane.notify_style_update()  # a restyle (a class, a hover, a theme) forgets them all
        pane.refresh()
        assert pane.render_lines(whole(pane)) is not red


async def test_a_table_shown_again_is_its_remembered_drawing_and_any_change_is_drawn_anew() -> None:
    """A new grid over the same traced tensor draws as the last one did: the remembered
    rows come back (Textual's drawing). A cell a quiz hides, the same tensor changed in
    place, another tensor with equal values, and a loop's canvas written to are drawn anew."""
    import torch

    from tracer.tracing.stepper import LoopCanvas
    from tracer.tui.grid import CanvasGrid, Highlight, TensorGrid

    tokens = ["Your", "journey", "starts"]
    scores = torch.arange(9, dtype=torch.float32).reshape(3, 3)
    app = app_with(lambda: TensorView(id="table"))
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(TensorView)

        async def drawn(grid: object) -> list[Strip]:
            view.show(grid)  # type: ignore[arg-type]
            await settle(pilot)
            return view.render_lines(whole(view))

        first = await drawn(TensorGrid("scores", scores, tokens))
        other = await drawn(TensorGrid("scores", scores * 2, tokens))
        assert rows(other) != rows(first)
        again = await drawn(TensorGrid("scores", scores, tokens))  # a new grid, same tensor
        assert again is first and rows(again) == textual_draws(view)

        hidden = Highlight(hidden=frozenset({(1, 1)}))  # a quiz's answer: drawn as "?"
        asked = await drawn(TensorGrid("scores", scores, tokens, highlight=hidden))
        assert asked is not first and "?" in "".join(strip.text for strip in asked)
        assert rows(asked) == textual_draws(view)

        equal = await drawn(TensorGrid("scores", scores.clone(), tokens))  # equal, not the same
        assert equal is not first and rows(equal) == rows(first)
        scores[0, 0] = 100.0  # changed in place: torch counts it
        changed = await drawn(TensorGrid("scores", scores, tokens))
        assert changed is not first and rows(changed) == textual_draws(view)

        canvas = LoopCanvas("scores", 3, 3)
        canvas.record(0, 0, 0, 1.5)
        before = await drawn(CanvasGrid("scores", canvas, 0, tokens, Highlight()))
        canvas.record(0, 0, 0, 2.5)  # the same moment of the loop, written anew
        after = await drawn(CanvasGrid("scores", canvas, 0, tokens, Highlight()))
        assert after is not before and rows(after) == textual_draws(view)
        assert rows(after) != rows(before)


def test_a_key_by_identity_keeps_nothing_alive_and_matches_no_newcomer() -> None:
    """What a remembered table is keyed by: its tensor, by identity, held weakly, so that a
    tensor gone (and another made in its place, perhaps at its address) matches nothing."""
    import gc
    import weakref

    from tracer.tui.grid import Same

    class Thing:
        pass

    first = Thing()
    key = Same(first)
    assert key == Same(first) and hash(key) == hash(Same(first))
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None  # the key did not keep it
    for _ in range(100):  # a newcomer, at the old address or not, is another object
        assert key != Same(Thing())
