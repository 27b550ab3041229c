"""docs/tutorial.md, the plugin tutorial, works as written: its files make a plugin that runs,
its test passes, and each shell block runs in a fresh shell in the order a reader meets it."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
HOME_FOLDER = "~/attn-softcap"
ACTIVATE = "source ~/attention-tracer/.venv/bin/activate"

Attn = Callable[..., tuple[int, str, str]]


def files(upto: str | None = None) -> dict[str, str]:
    """The files the tutorial says to save (a later version of a file replaces the earlier),
    from its start up to the heading ``upto``."""
    text = TUTORIAL if upto is None else TUTORIAL.split(upto, 1)[0]
    saved = re.finditer(
        r"Save this as\s+`~/attn-softcap/([^`]+)`[^`]*?```\w+\n(.*?)```", text, re.S
    )
    return {m.group(1): m.group(2) for m in saved}


def shell_blocks() -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", TUTORIAL, re.S | re.M)


def write(folder: Path, saved: dict[str, str]) -> None:
    for name, text in saved.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def test_every_block_runs_in_a_fresh_shell_and_fits_the_page() -> None:
    blocks = shell_blocks()
    assert blocks[0] == f"mkdir -p {HOME_FOLDER}/tests\n"
    for block in blocks[1:]:  # each one makes the environment active and goes to the folder
        assert block.startswith(f"{ACTIVATE}\ncd {HOME_FOLDER}\n"), block
    for block in blocks:
        assert subprocess.run(["bash", "-n", "-c", block]).returncode == 0
    fenced = re.findall(r"^```\w+\n(.*?)^```", TUTORIAL, re.S | re.M)
    assert max(len(line) for block in fenced for line in block.splitlines()) <= 72


def test_what_each_command_needs_is_installed_before_it() -> None:
    commands = [line for block in shell_blocks() for line in block.splitlines()]

    def first(pattern: str) -> int:
        return next(i for i, c in enumerate(commands) if re.search(pattern, c))

    assert first(r"^pip install -e '\.\[test\]'$") < first(r"^pytest$")
    assert first(r"^pip install build twine$") < first(r"^python -m build$")
    assert first(r"^python -m build$") < first(r"^twine check --strict dist/\*$")
    assert first(r"^twine check") < first(r"^twine upload --repository testpypi")
    assert first(r"--repository testpypi") < first(r"^twine upload dist/\*$")
    # The files are saved before the commands that use them.
    assert TUTORIAL.index("Save this as `~/attn-softcap/attn_softcap.py`") < TUTORIAL.index(
        "attn trace softcap --plugins-dir ."
    )
    assert TUTORIAL.index("tests/test_softcap.py`") < TUTORIAL.index("\npytest\n")


def test_the_package_declares_the_module_it_ships() -> None:
    project = tomllib.loads(files()["pyproject.toml"])
    assert project["project"]["entry-points"]["attention_tracer"] == {"softcap": "attn_softcap"}
    assert project["tool"]["setuptools"]["py-modules"] == ["attn_softcap"]
    assert project["project"]["name"] == "attn-softcap"
    assert "pytest" in project["project"]["optional-dependencies"]["test"]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The reader's ~/attn-softcap, as the working folder."""
    plugin = tmp_path / "attn-softcap"
    plugin.mkdir()
    monkeypatch.chdir(plugin)
    return plugin


def folder_commands(block_with: str) -> list[list[str]]:
    (block,) = [b for b in shell_blocks() if block_with in b]
    joined = block.replace("\\\n", " ")
    return [line.split()[1:] for line in joined.splitlines() if line.startswith("attn ")]


@pytest.mark.parametrize("step", ["## 3.", None])
def test_the_folder_plugin_runs_as_shown(attn: Attn, folder: Path, step: str | None) -> None:
    # The first version (before step 3) and the last: every command of step 2 runs.
    write(folder, files(step))
    for argv in folder_commands("attn trace softcap --plugins-dir .\n"):
        status, out, err = attn(*argv)
        assert (status, err) == (0, "")
        # Only the plugin's own lines are shown, though its folder is the working folder.
        lines = re.findall(r"^   (\S+):\d+  ", out, re.M)
        assert lines and set(lines) == {"attn_softcap.py"}


def test_the_cap_is_what_the_tutorial_says(attn: Attn, folder: Path) -> None:
    write(folder, files())
    (argv,) = folder_commands("--stages scores,capped")
    status, out, err = attn(*argv, "--json")
    assert (status, err) == (0, "")
    stages = {s["name"]: s for s in json.loads(out)["stages"]}
    scores = torch.tensor(stages["scores"]["tensors"]["scores"])
    capped = torch.tensor(stages["capped"]["tensors"]["capped"])
    torch.testing.assert_close(capped, 0.5 * torch.tanh(scores / 0.5))
    assert scores.abs().max() > 0.5  # the example shows the cap at work
    (refused,) = folder_commands("cap=0 ||")
    status, out, err = attn(*refused[: refused.index("||")])
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "cap" in err


def test_the_tutorials_own_test_passes(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(folder, files())
    monkeypatch.syspath_prepend(str(folder))
    for name in ("attn_softcap", "test_softcap"):
        sys.modules.pop(name, None)
    monkeypatch.syspath_prepend(str(folder / "tests"))
    try:
        module = importlib.import_module("test_softcap")
        tests = [getattr(module, n) for n in dir(module) if n.startswith("test_")]
        assert len(tests) == 3
        for test in tests:
            test()
    finally:
        for name in ("attn_softcap", "test_softcap"):
            sys.modules.pop(name, None)
