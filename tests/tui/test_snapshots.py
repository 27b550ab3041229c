"""SVG snapshots of the main screens at 80×24, 120×40 and 200×60 (pytest-textual-snapshot).

Every step kind (narration, show, a show of every tensor, a derived value, loop,
compare, quiz with its table, checkpoint, the end-of-lesson summary), the
explorer inside a loop and at its last stage, a 200-token overview, the token
view, and a light theme.

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

from tracer.tracing.runner import TraceOptions
from tracer.tui.launch import make_explore_app, make_lesson_app, make_picker_app
from tracer.tui.lesson_screen import LessonScreen

from .conftest import LESSON, PLUGINS, press, settle

Snap = Callable[..., bool]
SIZES = [(80, 24), (120, 40), (200, 60)]
IDS = ["80x24", "120x40", "200x60"]
LONG = Path(__file__).parent / "inputs" / "tokens200.yaml"


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


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_explore_inside_a_loop(snap_compare: Snap, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, *["right"] * 9)

    assert snap_compare(explore_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_explore_at_the_last_stage(snap_compare: Snap, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, "end")

    assert snap_compare(explore_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_explore_200_tokens_overview(snap_compare: Snap, size: tuple[int, int]) -> None:
    from tracer.inputs import load_inputs

    # "wide" is tiny without its loop: the same 200×200 tables, not 40,000 sub-steps first.
    app = make_explore_app("wide", TraceOptions(inputs=load_inputs(str(LONG))), [str(PLUGINS)])

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, "end")

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_explore_token_view(snap_compare: Snap) -> None:
    app = make_explore_app("tiny", TraceOptions(query=1), [str(PLUGINS)])

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, "end", "w")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


@pytest.mark.parametrize("theme", ["textual-light", "solarized-light"])
def test_lesson_loop_in_a_light_theme(snap_compare: Snap, theme: str) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        pilot.app.theme = theme
        await lesson_at(2, "right", "right")(pilot)

    assert snap_compare(lesson_app(), terminal_size=(120, 40), run_before=run_before)


def test_explore_at_the_smallest_size(snap_compare: Snap) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, "right", "right")

    assert snap_compare(explore_app(), terminal_size=(40, 12), run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_narration(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(0))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_show_step(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(1))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_compare_step(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(3))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_loop_step(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(2, "right", "right"))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_show_every_tensor(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(8))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_derived_value(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(7))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_quiz_with_its_table(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(9))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_checkpoint(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(6))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_end_summary(snap_compare: Snap, size: tuple[int, int]) -> None:
    assert snap_compare(lesson_app(), terminal_size=size, run_before=lesson_at(9, "right"))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_lesson_quiz_answered(snap_compare: Snap, size: tuple[int, int]) -> None:
    run_before = lesson_at(5, "0", "full_stop", "9", "enter")
    assert snap_compare(lesson_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
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
