"""A lesson whose structure is wrong (an unknown key, a step that is not a mapping) is
refused before any plugin, and so torch, is loaded, with exactly the lines the full
check would print for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.lessons.test_broken import CORPUS
from tracer.lessons.loader import structure_problems
from tracer.lessons.reading import LessonError, compose_text

Attn = Callable[..., tuple[int, str, str]]

UNKNOWN_STEP_KEY = "title: T\nsummary: S\nsteps:\n  - narration: hi\n    colour: red\n"
UNKNOWN_SHOW_KEY = (
    "title: T\nsummary: S\nsteps:\n"
    "  - show:\n      variant: naive-loop\n      stage: scores\n      colour: red\n"
)
STRUCTURAL = {
    # Every problem of these corpus lessons is one of structure: all found without plugins.
    "missing_everything",
    "unknown_top_key",
    "steps_mapping",
    "steps_empty",
    "step_scalar",
    "step_unknown_kind",
    "step_two_kinds",
    "step_key_outdented",
    "show_not_mapping",
    "show_unknown_key",
    "quiz_duplicate_id",
    "key_is_list",
}


def structure(text: str, path: str) -> list[str]:
    try:
        root = compose_text(text, path)
    except Exception:  # not YAML: the reading layer refuses it before this
        return []
    return [str(problem) for problem in structure_problems(root, path, Path.cwd())]


@pytest.mark.parametrize(("name", "text", "expected"), CORPUS, ids=[c[0] for c in CORPUS])
def test_what_the_structure_says_the_full_check_says_too(
    name: str, text: str, expected: list[str], tmp_path: Path
) -> None:
    """Each line found without plugins is one of the corpus's hand-written lines, word for
    word; where every expected line is one of structure, all of them are found."""
    path = str(tmp_path / f"{name}.yaml")
    expected_lines = [f"{path}:{line}".replace("{dir}", str(tmp_path)) for line in expected]
    found = structure(text, path)
    assert set(found) <= set(expected_lines)
    if name in STRUCTURAL:
        assert found == expected_lines


def test_the_structural_cases_are_in_the_corpus() -> None:
    assert {name for name, _, _ in CORPUS} >= STRUCTURAL


def test_a_sound_structure_has_no_problems_even_with_unknown_names(tmp_path: Path) -> None:
    """Names of variants, stages and options are the plugins' to judge: never a structural problem."""
    text = (
        "title: T\nsummary: S\noptions:\n  tile: 4\nsteps:\n"
        "  - show:\n      variant: no-such-variant\n      stage: nothing\n"
        "      options:\n        window: 2\n"
    )
    assert structure(text, str(tmp_path / "names.yaml")) == []
    # A step that takes its variant from defaults naming one no plugin has: no "needs a
    # variant" (without plugins every variant is unknown, and that is not the step's fault).
    text = (
        "title: T\nsummary: S\ndefaults: {variant: no-such-variant}\nsteps:\n"
        "  - show: {stage: scores}\n  - loop: {stage: scores}\n"
        "  - compare: {stage: scores, left: {}, right: {}}\n"
    )
    assert structure(text, str(tmp_path / "defaults.yaml")) == []


def test_check_and_run_refuse_a_structural_error_before_loading_plugins(
    tmp_path: Path, attn: Attn, host_loads: list[tuple[object, ...]]
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(UNKNOWN_STEP_KEY, encoding="utf-8")
    line = f"{path}:5:5: unknown key 'colour' beside 'narration' in step 1"
    assert attn("lesson", "check", str(path)) == (1, line + "\n", "")
    status, out, err = attn("lesson", "run", str(path), "--plain")
    assert (status, out, err) == (1, "", line + "\n")
    assert host_loads == []


def test_a_structural_error_is_reported_without_importing_torch(tmp_path: Path) -> None:
    """In a fresh interpreter (the test process has torch already): check three broken
    lessons, then look for torch among the loaded modules."""
    step_key = tmp_path / "step_key.yaml"
    step_key.write_text(UNKNOWN_STEP_KEY, encoding="utf-8")
    show_key = tmp_path / "show_key.yaml"
    show_key.write_text(UNKNOWN_SHOW_KEY, encoding="utf-8")
    bad_yaml = tmp_path / "bad_yaml.yaml"
    bad_yaml.write_text("title: T\nsummary: [S\n", encoding="utf-8")
    code = textwrap.dedent(
        """
        import sys
        from tracer.cli.main import main
        status = main(["lesson", "check", *sys.argv[1:]])
        print("status", status, "torch" in sys.modules, "numpy" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(step_key), str(show_key), str(bad_yaml)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert lines[0] == f"{step_key}:5:5: unknown key 'colour' beside 'narration' in step 1"
    assert lines[1].startswith(f"{show_key}:7:7: unknown key 'colour' in 'show'")
    assert lines[2].startswith(f"{bad_yaml}:")
    assert lines[-1] == "status 1 False False", result.stderr
    assert result.stderr == ""


def test_load_lesson_with_plugins_still_reports_every_problem(tmp_path: Path) -> None:
    """The shortcut is the command's: loading with a host reads the whole lesson as before
    (a structural problem and an unknown variant, both)."""
    from tracer.lessons.loader import load_lesson
    from tracer.plugin_host import PluginHost

    path = tmp_path / "both.yaml"
    path.write_text(
        "title: T\nsummary: S\nsteps:\n  - narration: hi\n    colour: red\n"
        "  - show:\n      variant: no-such-variant\n      stage: scores\n",
        encoding="utf-8",
    )
    with pytest.raises(LessonError) as raised:
        load_lesson(path, PluginHost(builtins_only=True))
    messages = [problem.message for problem in raised.value.problems]
    assert messages[0] == "unknown key 'colour' beside 'narration' in step 1"
    assert messages[1].startswith("unknown variant 'no-such-variant'")
