"""Entry points: `attn` alone opens the picker; the app's import chain leaves torch alone."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.cli.main import main
from tracer.tracing.runner import TraceOptions
from tracer.tui.launch import make_explore_app

from .conftest import PLUGINS, settle


def test_importing_the_app_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import tracer.cli.main, tracer.tui.launch, tracer.tui.app, tracer.tui.explore_screen\n"
        "import tracer.tui.lesson_screen, tracer.tui.picker_screen\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(("chosen", "expected"), [(None, "240"), ("30", "30")])
def test_the_app_raises_textuals_frame_cap_unless_the_user_chose_one(
    chosen: str | None, expected: str
) -> None:
    """A step's second frame (Textual's second layout pass) goes out within ~4 ms, not 16.7."""
    code = (
        "from tracer.tui.launch import make_picker_app\n"
        "make_picker_app()\n"
        "import textual.constants, textual.screen\n"
        "print(textual.constants.MAX_FPS, round(1 / textual.screen.UPDATE_PERIOD))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}
    if chosen is not None:
        env["TEXTUAL_FPS"] = chosen
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert result.stdout.split() == [expected, expected]


def test_attn_alone_opens_the_lesson_picker(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[argparse.Namespace] = []

    def fake_picker(args: argparse.Namespace) -> int:
        opened.append(args)
        return 0

    monkeypatch.setattr("tracer.cli.app_cmd.open_picker", fake_picker)
    assert main([]) == 0
    assert len(opened) == 1 and opened[0].command is None


def test_attn_explore_checks_its_options_before_starting_the_app(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explore", "naive-loop", "--query", "nope"]) == 2
    assert "--query 'nope' is not one of the tokens" in capsys.readouterr().err


async def test_the_chosen_theme_is_remembered(data_dir: Path) -> None:
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.theme = "nord"
        await pilot.pause()
    assert json.loads((data_dir / "settings.json").read_text(encoding="utf-8")) == {"theme": "nord"}
    again = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    assert again.theme == "nord"


ATTN = [sys.executable, "-c", "from tracer.cli.main import run; run()"]


@pytest.mark.parametrize(
    ("argv", "instead"),
    [
        ([], "'attn lesson run NAME --plain'"),
        (["lesson", "01_dot_products"], "'attn lesson run 01_dot_products --plain'"),
        (["explore", "naive-loop"], "'attn explore naive-loop --plain'"),
    ],
    ids=["picker", "lesson", "explore"],
)
def test_without_a_terminal_attn_says_what_to_use_and_exits_2(
    argv: list[str], instead: str, data_dir: Path
) -> None:
    result = subprocess.run(
        [*ATTN, *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "needs an interactive terminal" in line and instead in line
    assert result.stdout == ""


def test_explore_plain_prints_the_steps_and_the_declared_arithmetic(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explore", "tiny", "--plugins-dir", str(PLUGINS), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "== stage 1/3: inputs" in out and "== stage 3/3: weights" in out
    # The first of 36 dot products, term by term, and a count of the ones not printed.
    assert "0.4300×0.5500 + 0.1500×0.8700 + 0.8900×0.6600 = 0.9544" in out  # the course: 0.9544
    assert "… and 24 more sub-steps of this loop" in out


def test_explore_plain_reports_a_plugin_that_exits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "exits", "--plugins-dir", str(PLUGINS), "--plain"]) == 3
    assert "called sys.exit(0)" in capsys.readouterr().err


def test_a_crash_inside_the_app_never_exits_0() -> None:
    from tracer.tui.launch import run_app

    class Crashed:
        exit_status = 0
        return_code = 1  # what Textual sets after printing an unhandled exception

        def run(self) -> None:
            pass

    assert run_app(Crashed()) == 1  # type: ignore[arg-type]


def test_sigterm_restores_the_terminal_and_exits_143(data_dir: Path) -> None:
    import os
    import pty
    import select
    import signal
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the app on a pseudo-terminal
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [*ATTN, "explore", "tiny", "--plugins-dir", str(PLUGINS)])
    output = b""
    deadline = time.monotonic() + 60
    sent = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if not sent and b"Token embeddings" in output:  # the first step is on screen
            os.kill(pid, signal.SIGTERM)
            sent = True
    _, status = os.waitpid(pid, 0)
    assert sent
    assert os.waitstatus_to_exitcode(status) == 143
    after = output[output.rindex(b"Token embeddings") :]
    assert b"\x1b[?1049l" in after  # left the alternate screen
    assert b"\x1b[?1000l" in after  # mouse tracking off
