"""The plugin import time limit holds whatever the plugin catches, ignores or does."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import forked

SWALLOWS = """\
import time
while True:
    try:
        time.sleep(1)
    except BaseException:
        pass
"""

IGNORES_ALARM = """\
import signal, time
signal.signal(signal.SIGALRM, signal.SIG_IGN)
while True:
    time.sleep(0.1)
"""

HOOK_HANGS = """\
import time
import tracer

@tracer.hookimpl
def register_variants(register):
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass
"""


def run_attn(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``attn ARGV`` forked from this process (tests/forked.py), not a fresh interpreter.

    Equivalent here: the limit is on importing a plugin from a folder, which ``attn`` does
    in its own forked trial child and then in the process itself, whatever was imported
    before; ``ATTN_IMPORT_TIMEOUT`` is read when the plugin host is made, in the child.
    """
    import os

    environment = {**os.environ, "ATTN_IMPORT_TIMEOUT": "1", **(env or {})}
    return forked.run_attn(*argv, timeout=120, env=environment)  # today's code hangs for ever


@pytest.mark.parametrize(
    ("name", "source"),
    [("swallows", SWALLOWS), ("ignores_alarm", IGNORES_ALARM), ("hook_hangs", HOOK_HANGS)],
)
@pytest.mark.parametrize("command", [["plugins"], ["trace", "vectorized"]])
def test_a_plugin_that_will_not_stop_loading_is_stopped(
    tmp_path: Path, name: str, source: str, command: list[str]
) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"{name}.py").write_text(source)
    result = run_attn(*command, "--plugins-dir", str(folder))
    assert result.returncode == 0, result.stderr
    assert "took more than 1 s to load and was stopped" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_a_plugin_that_ends_the_process_at_import_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "quits.py").write_text("import os\nos._exit(0)\n")
    result = run_attn("plugins", "--plugins-dir", str(folder))
    assert result.returncode == 0
    assert "quits  [folder]" in result.stdout
    assert "FAILED: ended the process while loading (exit status 0)" in result.stdout


def test_a_plugin_named_like_a_built_in_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "masked.py").write_text("raise SystemExit('must never run')\n")
    result = run_attn("trace", "masked", "--plugins-dir", str(folder))
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == (
        "attn: warning: plugin 'masked' failed: the file name masked.py clashes with the "
        "built-in plugin 'masked'; rename the file (for example my_masked.py) (see 'attn plugins')"
    )


def test_a_keyboard_interrupt_at_import_is_a_plugin_that_failed_to_load(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "interrupts.py").write_text("raise KeyboardInterrupt\n")
    result = run_attn("trace", "vectorized", "--plugins-dir", str(folder))
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == (
        f"attn: warning: plugin 'interrupts' failed: KeyboardInterrupt ({folder / 'interrupts.py'}:1)"
        " (see 'attn plugins')"
    )
