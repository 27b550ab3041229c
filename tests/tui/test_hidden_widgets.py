"""A frame does not draw the widgets that the widgets in front of them hide, and is unchanged.

:class:`tracer.tui.steady.SteadyCompositor` skips a widget when every span of its box
is already filled by widgets in front of it. These tests compare each frame, piece by
piece (the text and style of each run), with the frame Textual's own compositor code
composes from every widget: on every step of the test lesson, in the explorer, under a
dialog, and on a screen built to have covered, half-covered, layered, offset, scrolled
and clipped widgets. They also check that covered containers are in fact not drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Label, Static

from tracer.tracing.runner import TraceOptions
from tracer.tui import textual_hooks as hooks
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.steady import SteadyCompositor

from .conftest import LESSON, PLUGINS, lesson_running, settle

pytestmark = pytest.mark.skipif(not hooks.CHOPS, reason="this Textual has no such hook")

Frame = list[list[tuple[int, object]]]


def frame(compositor: Compositor, *, textuals: bool, rows: Callable[[int], bool]) -> Frame:
    """Each row's pieces (where each starts, the text and style of its runs), composed with
    the cull or by Textual's own ``_render_chops``; rows that ``rows`` refuses are left out."""
    crop = compositor.size.region
    if textuals:
        chops = Compositor._render_chops(compositor, crop, rows)
    else:
        chops = compositor._render_chops(crop, rows)
    return [
        [
            (cut, None if strip is None else [(seg.text, seg.style) for seg in strip])
            for cut, strip in chop.items()
        ]
        for chop in chops
    ]


def every_row(y: int) -> bool:
    return True


def odd_rows(y: int) -> bool:
    return y % 2 == 1


def same_as_textuals(screen: Screen[Any]) -> None:
    """The screen's frame, whole and every other row, equals the one Textual composes."""
    compositor = screen._compositor
    assert isinstance(compositor, SteadyCompositor)
    for rows in (every_row, odd_rows):
        culled = frame(compositor, textuals=False, rows=rows)
        assert culled == frame(compositor, textuals=True, rows=rows), rows.__name__


@contextmanager
def drawn_widgets(screen: Screen[Any]) -> Iterator[list[Widget]]:
    """Every widget of ``screen`` asked for its rows while the block runs (each widget's
    own ``render_lines``, whichever class defines it, is wrapped on the instance)."""
    asked: list[Widget] = []
    widgets = [screen, *screen.walk_children(with_self=False)]

    def wrapped(widget: Widget) -> Callable[[Any], Any]:
        original = widget.render_lines

        def render_lines(crop: Any) -> Any:
            asked.append(widget)
            return original(crop)

        return render_lines

    for widget in widgets:
        widget.render_lines = wrapped(widget)  # type: ignore[method-assign]
    try:
        yield asked
    finally:
        for widget in widgets:
            del widget.render_lines


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_every_lesson_step_is_the_frame_textual_composes(size: tuple[int, int]) -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, size) as (pilot, screen):
        for number in range(len(screen.session.lesson.steps)):
            screen.go_to_step(number)
            await settle(pilot)
            same_as_textuals(screen)
        screen.go_to_step(0)  # no answer box has the focus
        await settle(pilot)
        await pilot.press("question_mark")  # the keys dialog over the lesson
        await settle(pilot)
        assert app.screen is not screen
        same_as_textuals(screen)


async def test_explorer_steps_are_the_frame_textual_composes() -> None:
    app = make_explore_app("naive-loop", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for _ in range(6):
            same_as_textuals(app.screen)
            await pilot.press("right")
            await settle(pilot)


async def test_a_covered_container_is_not_drawn_and_a_half_covered_one_is() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        screen.go_to_step(1)  # a show step: code beside a table
        await settle(pilot)
        main, tensors = screen.query_one("#main"), screen.pane
        compositor = screen._compositor
        with drawn_widgets(screen) as asked:
            frame(compositor, textuals=False, rows=every_row)
        # The screen and the row of columns are wholly covered by what they hold; the
        # table's pane shows its own border around its children.
        assert screen not in asked and main not in asked
        assert tensors in asked
        with drawn_widgets(screen) as asked:
            frame(compositor, textuals=True, rows=every_row)
        assert screen in asked and main in asked  # Textual draws them, to throw away


class Piled(Screen[None]):
    """Covered, half-covered, layered, offset, translucent, scrolled and clipped widgets."""

    DEFAULT_CSS = """
    Piled { layers: below above; }
    #full { height: 6; }
    #full > Static { width: 1fr; height: 1fr; background: $panel; }
    #half { height: 4; }
    #half > Static { width: 50%; background: $boost; }
    #over { layer: above; offset: 10 3; width: 30; height: 5; background: red 40%; }
    #scroller { height: 6; }
    #scroller > Static { height: 3; border: round $accent; }
    #wide { width: 200; height: 2; background: blue; }
    #shifted { offset: -4 1; height: 3; background: green; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._compositor = SteadyCompositor()

    def compose(self) -> ComposeResult:
        with Horizontal(id="full"):
            yield Static("left " * 30)
            yield Static("right " * 30)
        with Horizontal(id="half"):
            yield Static("only half")
        yield Label("floating above", id="over")
        with VerticalScroll(id="scroller"):
            for n in range(6):
                yield Static(f"item {n}")
        with Vertical():
            yield Static("too wide for the screen " * 8, id="wide")
            yield Static("shifted left and down", id="shifted")


class PiledApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(Piled())


class Dialog(ModalScreen[None]):
    DEFAULT_CSS = "Dialog { background: black 50%; } Dialog > Label { margin: 2 4; }"

    def compose(self) -> ComposeResult:
        yield Label("a dialog")


async def test_a_screen_of_piled_widgets_is_the_frame_textual_composes() -> None:
    app = PiledApp()
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Piled)
        same_as_textuals(screen)
        screen.query_one("#scroller").scroll_to(y=4, animate=False)
        await pilot.pause()
        same_as_textuals(screen)
        app.push_screen(Dialog())
        await pilot.pause()
        same_as_textuals(screen)  # now behind a translucent dialog
        with drawn_widgets(screen) as asked:
            frame(screen._compositor, textuals=False, rows=every_row)
        assert screen.query_one("#full") not in asked  # its two halves cover it
        assert screen.query_one("#half") in asked  # half of it shows


async def test_with_the_speed_ups_off_every_widget_is_drawn() -> None:
    app = PiledApp()
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        was = hooks.hooks_on()
        hooks.use_hooks(False)
        try:
            with drawn_widgets(screen) as asked:
                culled = frame(screen._compositor, textuals=False, rows=every_row)
        finally:
            hooks.use_hooks(was)
        assert screen in asked and screen.query_one("#full") in asked
        assert culled == frame(screen._compositor, textuals=True, rows=every_row)
