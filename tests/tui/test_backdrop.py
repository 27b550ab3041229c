"""Containers draw each kind of blank row once, and draw exactly what Textual draws.

The oracle is Textual's own row-by-row drawing (``Widget.render_lines`` with an
empty cache), asked for the same widget at the same size.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from tracer.tui.app import TracerApp
from tracer.tui.backdrop import Backdrop
from tracer.tui.launch import make_lesson_app
from tracer.tui.steady import Column, Row, ScrollColumn

from .conftest import LESSON, PLUGINS, lesson_running, settle


def textual_strips(widget: Widget) -> list[Strip]:
    """Every row of ``widget`` as Textual draws it, from an empty cache."""
    own_cache = widget._styles_cache
    widget._styles_cache = StylesCache()
    try:
        return Widget.render_lines(widget, whole(widget))
    finally:
        widget._styles_cache = own_cache


def textual_draws(widget: Widget) -> list[list[object]]:
    """Every row of ``widget`` as Textual draws it, from an empty cache, run by run."""
    return rows(textual_strips(widget))


def whole(widget: Widget) -> Region:
    """The widget's whole region, border and padding included, as the compositor crops it."""
    return Region(0, 0, *widget.region.size)


def rows(strips: list[Strip]) -> list[list[object]]:
    return [[(segment.text, segment.style) for segment in strip] for strip in strips]


def backdrops_match(app: TracerApp) -> int:
    """Compare every container on screen with Textual's drawing; how many were compared."""
    compared = 0
    screen = app.screen  # a stepping screen draws its background the same way
    assert isinstance(screen, Backdrop)
    for widget in [screen, *screen.query("*").results(Backdrop)]:
        if not widget.display or widget.region.area == 0:
            continue
        ours = rows(widget.render_lines(whole(widget)))
        assert ours == textual_draws(widget), f"{type(widget).__name__}#{widget.id}"
        compared += 1
    return compared


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
async def test_every_container_on_every_lesson_step_draws_what_textual_draws(
    size: tuple[int, int], no_color: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app, size) as (pilot, screen):
        compared = 0
        for number in range(len(screen.session.lesson.steps)):
            screen.go_to_step(number)
            await settle(pilot)
            compared += backdrops_match(app)
        assert compared > 3 * len(screen.session.lesson.steps)  # several nested on each step


class Bordered(Column):
    DEFAULT_CSS = """
    Bordered {
        border: round red;
        border-title-color: yellow;
        outline: heavy blue;
        padding: 2 1 1 3;
        background: $panel;
        height: 12;
    }
    """


class Keylined(Row):
    DEFAULT_CSS = "Keylined { keyline: thin green; height: 6; }"


class Hatched(ScrollColumn):
    DEFAULT_CSS = "Hatched { hatch: cross $primary; height: 6; }"


class Nest(App[None]):
    def compose(self) -> ComposeResult:
        with Bordered(id="bordered"):
            yield Static("inside", id="inside")
        with Keylined(id="keylined"):
            yield Static("a")
            yield Static("b")
        with Hatched(id="hatched"):
            yield Static("c")


@contextmanager
def counting_rows(widget: Widget) -> Iterator[list[int]]:
    """Counts the rows Textual's per-row path draws for ``widget``."""
    drawn = [0]
    cache = widget._styles_cache
    original = cache.render_line

    def counted(*args: object, **kwargs: object) -> Strip:
        drawn[0] += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    cache.render_line = counted  # type: ignore[method-assign]
    try:
        yield drawn
    finally:
        del cache.render_line


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_borders_titles_outline_and_padding_draw_what_textual_draws(theme: str) -> None:
    app = Nest()
    async with app.run_test(size=(40, 30)) as pilot:
        app.theme = theme
        bordered = app.query_one(Bordered)
        bordered.border_title = "a title"
        bordered.border_subtitle = "below"
        await pilot.pause()
        for widget in app.query("*").results(Backdrop):
            assert rows(widget.render_lines(whole(widget))) == textual_draws(widget)
            # A crop (part of a frame) is drawn as Textual draws it too.
            crop = whole(widget).shrink((1, 1, 1, 2))
            assert rows(widget.render_lines(crop)) == rows(Widget.render_lines(widget, crop))


async def test_a_plain_container_draws_each_band_once() -> None:
    app = Nest()
    async with app.run_test(size=(40, 30)) as pilot:
        await pilot.pause()
        bordered = app.query_one(Bordered)
        bordered.notify_style_update()  # restyled: nothing kept or remembered
        bordered.refresh()
        with counting_rows(bordered) as drawn:
            bordered.render_lines(whole(bordered))
        # Twelve rows: two border rows, the padding above, the rows inside, the padding
        # below. Textual alone draws all twelve.
        assert drawn[0] == 5
        for plain in ("keylined", "hatched"):  # rows that differ: Textual draws each
            widget = app.query_one(f"#{plain}")
            widget.notify_style_update()
            widget.refresh()
            with counting_rows(widget) as drawn:
                widget.render_lines(whole(widget))
            assert drawn[0] == widget.region.height
