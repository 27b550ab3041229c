"""SVG snapshots of the main screens at 80×24 and 120×40 (pytest-textual-snapshot).

Regenerate after an intended change with
``.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update`` and look at
the SVGs under ``__snapshots__/`` before committing them. Explore and lesson
snapshots use the test plugin in ``tests/tui/plugins``, and the picker lists
only the test lesson, so edits to the built-in variants and lessons leave them alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tracer.runner import TraceOptions
from tracer.tui.launch import make_explore_app, make_lesson_app, make_picker_app
from tracer.tui.lesson_screen import LessonScreen

from .conftest import LESSON, PLUGINS, press, settle

Snap = Callable[..., bool]
SIZES = [(80, 24), (120, 40)]


def explore_app() -> Any:
    return make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])


def lesson_app() -> Any:
    return make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])


def lesson_at(step: int, *keys: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, LessonScreen)
        screen.go_to_step(step)
        await settle(pilot)
        await press(pilot, *keys)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_explore_inside_a_loop(snap_compare: Snap, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, *["right"] * 9)

    assert snap_compare(explore_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_explore_at_the_last_stage(snap_compare: Snap, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, "end")

    assert snap_compare(explore_app(), terminal_size=size, run_before=run_before)


def test_explore_at_the_smallest_size(snap_compare: Snap) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, "right", "right")

    assert snap_compare(explore_app(), terminal_size=(40, 12), run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_lesson_narration(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(0))


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_lesson_show_step(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(1))


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_lesson_compare_step(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(3))


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_lesson_quiz_answered(snap_compare: Snap, size: tuple[int, int]) -> None:
    run_before = lesson_at(5, "0", "full_stop", "9", "enter")
    assert snap_compare(lesson_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_picker(
    snap_compare: Snap, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot, attribute="store")

    # Only the test lesson, so adding a shipped lesson does not change this snapshot.
    empty = tmp_path / "no-shipped-lessons"
    empty.mkdir()
    monkeypatch.setattr("tracer.lessons.loader.shipped_dir", lambda: empty)
    # A relative folder, shown as the lessons' origin, is the same on every checkout.
    monkeypatch.chdir(LESSON.parent.parent.parent.parent)
    monkeypatch.setenv("ATTN_LESSONS_DIR", "tests/tui/lessons")

    assert snap_compare(make_picker_app(), terminal_size=size, run_before=run_before)


def test_help_overlay(snap_compare: Snap) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(explore_app(), terminal_size=(80, 24), run_before=run_before)
