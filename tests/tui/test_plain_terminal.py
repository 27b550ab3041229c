"""Terminals that cannot draw the app: TERM=dumb gets plain text, NO_COLOR a readable screen.

TERM=dumb is a real terminal (Emacs' shell, some IDE consoles) that cannot
take the app's escape codes: the commands that open the app run their plain
form there, on a pseudo-terminal here, and say so in one line on stderr.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests import forked
from tracer.session.progress import LessonProgress, ProgressStore
from tracer.tui.source_view import SourceView
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.timeline import Timeline

from .conftest import PLUGINS, press, settle

NOTICE = "TERM=dumb cannot draw the app"


def on_a_terminal(argv: list[str], term: str = "dumb") -> tuple[int, str]:
    """Run ``attn ARGV`` on a pseudo-terminal with TERM set; (exit status, all it wrote).

    Forked from this process (tests/forked.py), not a fresh interpreter: what is checked is
    what ``attn`` writes on a terminal it reads TERM and NO_COLOR from when it runs, and the
    child's stdin, stdout and stderr are that terminal, its controlling one, as with
    ``pty.fork``. ``tests/tui/test_entry.py`` starts the real ``attn`` script.
    """
    env = {**os.environ, "TERM": term}
    env.pop("NO_COLOR", None)
    return forked.run_attn_on_terminal(*argv, env=env)


def plain(argv: list[str]) -> str:
    """What the plain form prints into a pipe: the independent reference for the dumb terminal."""
    result = forked.run_attn(*argv)
    assert result.returncode == 0, result.stderr
    return result.stdout


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r\n", "\n").splitlines()]


def test_term_dumb_lists_the_lessons_with_their_progress(data_dir: Path) -> None:
    from tracer.lessons.loader import find_lessons, shipped_dir
    from tracer.session.progress import lesson_key

    second = find_lessons()[1]
    ProgressStore(data_dir).save(
        lesson_key(second.path, shipped_dir()),
        LessonProgress(step=2, steps=9, title=second.title, updated=time.time()),
    )
    status, out = on_a_terminal([])
    assert status == 0
    shown = lines(out)
    assert sum(NOTICE in line for line in shown) == 1
    assert "\x1b[" not in out  # no escape codes on a terminal that cannot take them
    row = next(line for line in shown if line.lstrip().startswith("2. "))
    assert second.title in row and "step 3 of 9" in row
    assert any(line.lstrip().startswith("1. ") and "not started" in line for line in shown)
    assert "You stopped in lesson 2 at step 3 of 9." in shown
    assert any("attn lesson NUMBER" in line for line in shown)


def test_term_dumb_runs_the_plain_lesson() -> None:
    status, out = on_a_terminal(["lesson", "01_dot_products"])
    assert status == 0
    shown = lines(out)
    assert sum(NOTICE in line and "the lesson" in line for line in shown) == 1
    assert [line for line in shown if NOTICE not in line] == lines(
        plain(["lesson", "run", "01_dot_products", "--plain"])
    )


def test_term_dumb_runs_the_plain_explorer() -> None:
    status, out = on_a_terminal(["explore", "tiny", "--plugins-dir", str(PLUGINS)])
    assert status == 0
    shown = lines(out)
    assert sum(NOTICE in line for line in shown) == 1
    expected = lines(plain(["explore", "tiny", "--plugins-dir", str(PLUGINS), "--plain"]))
    assert [line for line in shown if NOTICE not in line] == expected


def test_term_dumb_still_refuses_an_unknown_lesson_with_exit_2() -> None:
    status, out = on_a_terminal(["lesson", "no_such_lesson"])
    assert status == 2
    (line,) = [line for line in lines(out) if line]
    assert "no_such_lesson" in line and "Traceback" not in out


def test_term_dumb_without_a_terminal_still_exits_2() -> None:
    result = forked.run_attn(timeout=60, env={**os.environ, "TERM": "dumb"})  # stdin: /dev/null
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "needs an interactive terminal" in line and "--plain" in line


async def test_with_no_color_the_explorer_marks_by_more_than_colour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracer.tracing.runner import TraceOptions
    from tracer.tui.launch import make_explore_app

    monkeypatch.setenv("NO_COLOR", "1")  # read by Textual when the app is made
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    assert app.no_color
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right", "right")  # inside the loop of dot products
        screen = app.screen
        view = screen.query_one(TensorPane).view
        assert view.mode == "numbers"  # never an overview made only of colour
        current = view._style("current")
        assert current.underline and current.bold  # the cell being computed
        source = screen.query_one(SourceView)
        assert source.marked
        gutters = [source.render_line(y).text[:1] for y in range(source.size.height)]
        assert {"▶", "◆"} & set(gutters)  # the lines that ran, marked by a sign
        timeline = screen.query_one(Timeline)
        current_items = [w for w in timeline.items if w.current]
        assert len(current_items) == 1
        # The step you are on: bold as drawn, not only a hue; no other item is bold.
        strips = screen._compositor.render_strips()
        row = strips[timeline.region.y]
        for item in timeline.items:
            placed = screen.find_widget(item).region
            cells = row.crop(placed.x, placed.right)
            assert cells.text.strip()
            bold = [bool(segment.style and segment.style.bold) for segment in cells]
            assert all(bold) if item.current else not any(bold), item.label
