"""Entry points: `attn` alone opens the picker; the app's import chain leaves torch alone."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.cli.main import main
from tracer.runner import TraceOptions
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


def test_attn_alone_opens_the_lesson_picker(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[argparse.Namespace] = []

    def fake_picker(args: argparse.Namespace) -> int:
        opened.append(args)
        return 0

    monkeypatch.setattr("tracer.tui.launch.open_picker", fake_picker)
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
