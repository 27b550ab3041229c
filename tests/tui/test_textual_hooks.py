"""With every private Textual hook off, the app draws exactly what it draws with them on.

The speed-ups in ``tracer.tui.kept``, ``backdrop``, ``steady`` and ``source_view``
override Textual's private drawing hooks; each is feature-detected and can be
switched off (``ATTN_TEXTUAL_HOOKS=off``), when Textual draws on its own. The same
keys are pressed in a lesson and in the explorer, once with the hooks and once
without, and every screen along the way must be the same, cell by cell and style by
style.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator

import pytest
import textual
from textual.app import App
from textual.scrollbar import ScrollBar

from tracer.tracing.runner import TraceOptions
from tracer.tui import textual_hooks
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.source_view import SourceView
from tracer.tui.steady import SteadyScrollBar

from .conftest import LESSON, PLUGINS, settle

Picture = list[list[tuple[str, object]]]


@pytest.fixture
def hooks_restored() -> Iterator[None]:
    was = textual_hooks.hooks_on()
    yield
    textual_hooks.use_hooks(was)


def picture(app: App[object]) -> Picture:
    """The composed screen: each row's runs of text with their styles, as painted."""
    strips = app.screen._compositor.render_strips()
    return [[(segment.text, segment.style) for segment in strip] for strip in strips]


async def pictures(make: Callable[[], App[object]], keys: list[str], hooks: bool) -> list[Picture]:
    textual_hooks.use_hooks(hooks)
    app = make()
    seen = []
    async with app.run_test(size=(110, 34)) as pilot:
        await settle(pilot)
        seen.append(picture(app))
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
            seen.append(picture(app))
        # The switch did switch: the code pane's scrollbar is the steady kind only with hooks.
        bars = {type(view.vertical_scrollbar) for view in app.screen.query(SourceView)}
        assert bars == {SteadyScrollBar if hooks else ScrollBar}, bars
    return seen


def first_difference(on: list[Picture], off: list[Picture]) -> str:
    for index, (a, b) in enumerate(zip(on, off, strict=True)):
        for row, (line_a, line_b) in enumerate(zip(a, b, strict=True)):
            if line_a != line_b:
                text_a = "".join(text for text, _ in line_a)
                text_b = "".join(text for text, _ in line_b)
                return f"screen {index}, row {row}:\n on: {text_a!r}\noff: {text_b!r}"
    return ""


async def test_a_lesson_draws_the_same_without_the_hooks(hooks_restored: None) -> None:
    # Forward through every kind of step (narration, show, loop, compare, quiz), then back.
    keys = ["right"] * 13 + ["left"] * 2

    def make() -> App[object]:
        return make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])

    on = await pictures(make, keys, hooks=True)
    off = await pictures(make, keys, hooks=False)
    assert len(on) == len(off) == len(keys) + 1
    assert on == off, first_difference(on, off)
    assert len({str(p) for p in on}) > 5  # the keys did move through the lesson


async def test_the_explorer_draws_the_same_without_the_hooks(hooks_restored: None) -> None:
    # Into the loop of the tiny variant and through a few of its sub-steps.
    keys = ["right"] * 4

    def make() -> App[object]:
        return make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])

    on = await pictures(make, keys, hooks=True)
    off = await pictures(make, keys, hooks=False)
    assert on == off, first_difference(on, off)
    assert len({str(p) for p in on}) > 3


def test_every_hook_is_found_in_the_textual_we_test_with() -> None:
    """A hook missing here means the speed-up it serves is off: update the override."""
    found = textual_hooks.detected()
    assert all(found.values()), f"Textual {textual.__version__}: {found}"


@pytest.mark.parametrize(
    ("value", "on"), [("", True), ("on", True), ("off", False), ("OFF", False), ("0", False)]
)
def test_the_environment_switch(value: str, on: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(textual_hooks.SWITCH, value)
    try:
        assert importlib.reload(textual_hooks).hooks_on() is on
    finally:
        monkeypatch.delenv(textual_hooks.SWITCH)
        importlib.reload(textual_hooks)
