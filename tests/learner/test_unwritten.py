"""An exercise fresh from `attn exercises init` is not written yet: `attn check` says so in one
line, at the TODO that raised, and exits 1 (problems found), never with a traceback."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

Attn = Callable[..., tuple[int, str, str]]


def raising_todo(path: Path) -> tuple[str, int]:
    """The function and line of the first `raise NotImplementedError` in the file, read from
    its syntax tree (not from the tool)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Raise) and "NotImplementedError" in ast.unparse(node):
                    return function.name, node.lineno
    raise AssertionError(f"no TODO raise in {path}")


@pytest.mark.parametrize(("number", "variant"), [("01", "naive-loop"), ("04", "trainable")])
def test_check_on_a_fresh_exercise_says_it_is_not_written_yet(
    attn: Attn, tmp_path: Path, number: str, variant: str
) -> None:
    status, _, err = attn("exercises", "init", str(tmp_path / "ex"))
    assert status == 0, err
    (path,) = (tmp_path / "ex").glob(f"{number}_*.py")
    function, line = raising_todo(path)

    status, out, err = attn("check", str(path), "--against", variant)

    assert status == 1  # problems found (docs/reference.md, attn check)
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"{path}:{line}: not written yet: {function}() raises ")
    assert "replace the TODOs" in err


def test_the_json_report_carries_the_same_line(attn: Attn, tmp_path: Path) -> None:
    attn("exercises", "init", str(tmp_path / "ex"))
    (path,) = (tmp_path / "ex").glob("01_*.py")
    status, out, err = attn("check", str(path), "--against", "naive-loop", "--json")
    assert status == 1
    assert json.loads(out)["error"] == err


def test_a_not_implemented_error_from_elsewhere_is_still_the_codes_failure(
    attn: Attn, tmp_path: Path
) -> None:
    # Raised by a helper module the learner imports, not by a line of the checked file: a
    # failure of their code (exit 2, with its traceback), not an unwritten exercise.
    (tmp_path / "helper.py").write_text("def score(q, k):\n    raise NotImplementedError\n")
    path = tmp_path / "mine.py"
    path.write_text(
        "import torch\nfrom helper import score\n\n"
        "def attention(inputs):\n    return score(inputs, inputs)\n"
    )
    status, _, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2
    assert "not written yet" not in err
    assert "NotImplementedError" in err


def test_the_learners_guide_shows_what_attn_check_prints(attn: Attn, tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "learners.md").read_text("utf-8")
    (shown,) = [b for b in re.findall(r"```console\n(.*?)```", guide, re.S) if "not written" in b]
    command, printed = shown.splitlines()
    argv = command.removeprefix("$ attn ").split()
    folder = argv[1].split("/")[0]
    status, _, err = attn("exercises", "init", str(tmp_path / folder))
    assert status == 0, err
    argv[1] = str(tmp_path / argv[1])
    status, out, err = attn(*argv)
    assert (status, out) == (1, "")
    assert err == printed.replace(f"{folder}/", f"{tmp_path / folder}/", 1) + "\n"
