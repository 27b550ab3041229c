"""Conventions of the package: shell completion, the app for Textual's dev tools, hooks = CI."""

from __future__ import annotations

import importlib
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def complete(script: str, line: str) -> list[str]:
    """What bash offers for ``line`` (ending in the word being completed) with ``script`` loaded."""
    words = line.split(" ")
    program = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        f"COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}\n"
        '_shtab_attn; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile"],
        input=program,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.split()


def test_bash_completion_offers_the_commands_and_their_options(attn: Any) -> None:
    status, script, err = attn("completion", "bash")
    assert status == 0 and err == ""
    assert complete(script, "attn se") == ["serve"]
    assert "--port" in complete(script, "attn serve --")
    assert set(complete(script, "attn exercises ")) >= {"init", "watch", "hint", "list"}


def test_zsh_completion_is_a_zsh_completion_function(attn: Any) -> None:
    status, script, _ = attn("completion", "zsh")
    assert status == 0 and script.startswith("#compdef attn")
    assert "serve" in script and "--port" in script


def test_completion_for_an_unknown_shell_is_a_usage_error(attn: Any) -> None:
    status, out, err = attn("completion", "fish")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("variant", "screen"), [(None, "PickerScreen"), ("masked", "ExploreScreen")]
)
async def test_the_dev_module_has_an_app_that_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variant: str | None, screen: str
) -> None:
    """``textual run --dev tracer.tui.dev:app`` needs a module-level app object."""
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path))
    if variant:
        monkeypatch.setenv("ATTN_DEV_VARIANT", variant)
    else:
        monkeypatch.delenv("ATTN_DEV_VARIANT", raising=False)
    import tracer.tui.dev as dev

    app = importlib.reload(dev).app
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert type(app.screen).__name__ == screen


def test_pre_commit_runs_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text().replace("\\\n", "\n").splitlines()
    commands = [line.strip().removeprefix("&& ") for line in ci]
    # The slow tests (.venv/bin/pytest -m slow) are CI's alone: a push runs the quick suite.
    # So are the documentation site and the distributions (the docs extra, mkdocs, build, twine).
    ci_alone = (".venv/bin/pytest", ".venv/bin/pip", ".venv/bin/mkdocs", ".venv/bin/twine")
    ci_checks = [
        command
        for command in commands
        if command.startswith(".venv/bin/") and not command.startswith(ci_alone)
    ]
    assert len(ci_checks) == 3, ci_checks  # ruff check, ruff format --check, mypy
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    entries = [hook["entry"] for hook in hooks]
    for check in ci_checks:
        assert check in entries, check
    tests = next(hook for hook in hooks if hook["id"] == "pytest")
    assert tests["entry"].startswith(".venv/bin/pytest") and tests["stages"] == ["pre-push"]
