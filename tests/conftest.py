"""Shared fixtures: one plugin host per session (loading plugins is the slow part)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tracer.cli.main import main
from tracer.plugin_host import PluginHost

FIXTURES = Path(__file__).parent / "fixtures"

# In CI (CI=true) hypothesis draws the same examples every run, so a landing never
# depends on luck; run locally, it explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def host() -> PluginHost:
    return PluginHost(use_env=False)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see a developer's own plugin folders or strict mode."""
    for name in ("ATTN_PLUGINS_DIR", "ATTN_STRICT_PLUGINS", "ATTN_LESSONS_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def attn(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``attn ARGS...`` in-process: (exit status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            status = main(list(argv))
        except SystemExit as exit:  # argparse's own usage errors
            status = int(exit.code or 0)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture
def attn_json(attn: Callable[..., tuple[int, str, str]]) -> Callable[..., Any]:
    def run(*argv: str) -> Any:
        status, out, err = attn(*argv, "--json")
        assert status == 0, err
        return json.loads(out)

    return run
