"""The app shows a token's or a lesson's escape sequence as visible text, never emits it."""

from __future__ import annotations

import json
from pathlib import Path

from tracer.tracing.runner import TraceOptions
from tracer.tui.launch import make_explore_app, make_lesson_app

from .conftest import settle

OSC_TITLE = "\x1b]0;owned\x07"
OSC_52 = "\x1b]52;c;aGVsbG8=\x07"


async def test_explore_shows_a_tokens_escape_visibly(tmp_path: Path) -> None:
    inputs = tmp_path / "hostile.json"
    document = {"tokens": [OSC_TITLE, "\x1b[2J", "ok"], "embeddings": [[1, 0], [0, 1], [1, 1]]}
    inputs.write_text(json.dumps(document))
    app = make_explore_app("vectorized", TraceOptions(inputs=str(inputs)), [])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        screen = app.export_screenshot()
    assert "\x1b" not in screen
    assert "␛]0;owned" in screen


async def test_a_lesson_shows_osc_52_visibly(tmp_path: Path) -> None:
    lesson = tmp_path / "clip.yaml"
    lesson.write_text(
        json.dumps(
            {
                "title": f"Clip {OSC_52}",
                "summary": "S",
                "steps": [{"narration": f"Hello {OSC_52} there"}],
            }
        )
    )
    app = make_lesson_app(lesson, resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.export_screenshot()
    assert "\x1b" not in screen
    assert "␛]52;c;aGVsbG8=␇" in screen
