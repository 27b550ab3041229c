"""Fixtures for the TUI tests: a private data folder, test plugins and lessons, and waits.

Waits are on conditions (the lesson has loaded, no worker is running), never
on wall-clock sleeps, so the tests do not depend on the machine's speed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rich.style import Style
from textual import _wait
from textual.app import App
from textual.pilot import Pilot
from textual.strip import Strip

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import ComposeResult
    from textual.widget import Widget

    from tracer.tui.lesson_screen import LessonScreen

# Textual's pilot waits for the app to go idle in slices of 20 ms, several per key press: two
# thirds of a key's time in these tests. Slices of 5 ms (the same ratio of busy to idle)
# decide "idle" the same way; our waits never rely on it alone (see settle()).
_wait.SLEEP_GRANULARITY = 0.005
_wait.SLEEP_IDLE = _wait.SLEEP_GRANULARITY / 20

HERE = Path(__file__).parent
PLUGINS = HERE / "plugins"
LESSON = HERE / "lessons" / "tui_lesson.yaml"


@pytest.fixture(autouse=True)
def _plugins_in_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test plugins' variants run in the app's own process (``ATTN_ISOLATE=off``).

    attn runs a plugin that is not built in in a forked worker; forking the test process
    (torch, Textual and every earlier test's objects) and copying its pages on each write
    afterwards cost about 0.3 of the 1.0 CPU-seconds of an app's start, at every start.
    What these tests look at is the drawing, which is the same either way. The worker
    itself is tested in tests/core (test_worker*.py, test_hangup's workers), and a test
    marked ``isolated`` keeps it here (the worker's steps, its end with the app)."""
    if not request.node.get_closest_marker("isolated"):
        monkeypatch.setenv("ATTN_ISOLATE", "off")


@pytest.fixture(autouse=True)
def _trial_imports_once(trial_imports_once: None) -> None:
    """Each test plugin file is tried once a worker (tests/conftest.py says why)."""


@pytest.fixture(autouse=True)
def _no_user_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's own keys and theme, never a developer's (the data folder is each test's
    own: tests/conftest.py's ``data_dir``)."""
    monkeypatch.delenv("ATTN_KEYMAP", raising=False)
    monkeypatch.delenv("ATTN_THEME", raising=False)


@pytest.fixture
def lesson_copy(tmp_path: Path) -> Path:
    """An editable copy of the test lesson (for reload tests)."""
    path = tmp_path / "lesson.yaml"
    path.write_text(LESSON.read_text(encoding="utf-8"), encoding="utf-8")
    return path


async def settle(pilot: Pilot[object], *, attribute: str = "session", limit: int = 2000) -> None:
    """Wait until the current screen has loaded and every worker has finished."""
    app: App[object] = pilot.app
    for _ in range(limit):
        await pilot.pause()
        screen = app.screen
        loaded = getattr(screen, attribute, True) is not None
        if loaded and not any(worker.is_running for worker in app.workers):
            # Two more passes: what the last messages scheduled "after the next refresh"
            # (a timeline counting the items its new size hides) runs, and is drawn.
            await pilot.pause()
            await pilot.pause()
            return
        await asyncio.sleep(0.005)
    raise TimeoutError("the app did not settle")


@asynccontextmanager
async def lesson_running(
    app: App[object], size: tuple[int, int] = (120, 40)
) -> AsyncIterator[tuple[Pilot[object], LessonScreen]]:
    """``app`` (a lesson app) running at ``size``, its lesson loaded: its pilot and screen."""
    from tracer.tui.lesson_screen import LessonScreen

    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LessonScreen), getattr(screen, "message", screen)
        assert screen.session is not None
        yield pilot, screen


async def press(pilot: Pilot[object], *keys: str) -> None:
    """Press keys one at a time, letting any work a key starts finish before the next."""
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def seen_cells(strip: Strip) -> list[tuple[str, Style]]:
    """A row as it is seen, one (character, style) a cell: segments may be split
    differently, mouse metadata is not seen, and a blank cell shows only its background
    (and lines drawn through it)."""
    seen = []
    for segment in strip:
        style = segment.style or Style()
        lines = {
            "underline": style.underline or None,  # False and unset look the same
            "strike": style.strike or None,
            "reverse": style.reverse or None,
        }
        for char in segment.text:
            if char.isspace():
                seen.append((char, Style(bgcolor=style.bgcolor, **lines)))
            else:
                looks = {
                    "bold": style.bold or None,
                    "dim": style.dim or None,
                    "italic": style.italic or None,
                    **lines,
                }
                seen.append((char, Style(color=style.color, bgcolor=style.bgcolor, **looks)))
    return seen


def app_with(make: Callable[[], Widget]) -> App[Any]:
    """A bare app whose screen holds the one widget ``make`` makes (as the app composes)."""

    class One(App[Any]):
        def compose(self) -> ComposeResult:
            yield make()

    return One()
