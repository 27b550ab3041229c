"""The timeline: a clipped strip says how much is out of view, and visited items are marked.

What is checked is the text on screen: which items' labels are drawn whole, and the markers
at the edges, against the lesson's own list of steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot

from tracer.lessons.loader import parse_lesson, shipped_dir
from tracer.tracing.runner import TraceOptions
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.lesson_screen import step_label
from tracer.tui.timeline import Timeline

from .conftest import PLUGINS, press, settle

LONG_LESSON = "07_multi_head.yaml"  # 24 steps: far wider than 120 columns


def drawn(app: App[object]) -> str:
    timeline = app.screen.query_one(Timeline)
    strips = app.screen._compositor.render_strips()  # the composed screen, one strip a row
    region = timeline.region
    return strips[region.y].text[region.x : region.right]


async def timeline_line(pilot: Pilot[object]) -> str:
    """The timeline's row of the screen, as drawn once it has stopped changing (the markers
    are counted after each layout, and a marker appearing narrows the strip once more)."""
    line, same = drawn(pilot.app), 0
    for _ in range(200):
        await pilot.pause()
        now = drawn(pilot.app)
        same = same + 1 if now == line else 0
        line = now
        if same == 3:
            break
    return line


def labels(path: Path) -> list[str]:
    lesson = parse_lesson(path.read_text(encoding="utf-8"), str(path))
    return [step_label(n + 1, step)[0] for n, step in enumerate(lesson.steps)]


def drawn_whole(app: App[object]) -> list[str]:
    """Labels of the items the screen draws whole: the compositor's region for the item lies
    inside the clip it is drawn through (the strip's visible part)."""
    shown = []
    for item in app.screen.query_one(Timeline).items:
        placed = app.screen.find_widget(item)
        if placed.region.width and placed.clip.contains_region(placed.region):
            shown.append(item.label)
    return shown


async def test_a_clipped_timeline_says_how_many_steps_are_out_of_view() -> None:
    path = shipped_dir() / LONG_LESSON
    names = labels(path)
    app = make_lesson_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        line = await timeline_line(pilot)
        assert line.rstrip().endswith(" more ›") and "‹" not in line
        hidden = int(line.rstrip().removesuffix(" more ›").split()[-1])
        # Exactly the steps not drawn whole are counted, and they are the last ones.
        assert hidden > 0
        assert drawn_whole(app) == names[: len(names) - hidden]
        assert all(label in line for label in names[: len(names) - hidden])

        await press(pilot, "end")  # the last step: now the first ones are out of view
        await pilot.pause()
        line = await timeline_line(pilot)
        assert line.lstrip().startswith("‹ ") and "more ›" not in line
        before = int(line.split()[1])
        assert before > 0
        assert drawn_whole(app) == names[before:]
        assert all(label in line for label in names[before:])


async def test_a_timeline_that_fits_has_no_markers() -> None:
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        line = await timeline_line(pilot)
        assert "more ›" not in line and "‹" not in line


@pytest.mark.parametrize("no_color", [True, False])
async def test_visited_items_are_marked_by_a_sign_not_only_colour(
    no_color: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        timeline = app.screen.query_one(Timeline)
        line = await timeline_line(pilot)
        keys = [item.key for item in timeline.items]
        *visited, current = keys
        assert timeline.current == current
        for key in visited:
            assert f"✓ {key} " in line
        assert f"✓ {current}" not in line
        await press(pilot, "home")  # back at the start, nothing lies behind
        assert "✓" not in await timeline_line(pilot)
