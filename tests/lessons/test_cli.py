"""`attn lessons` and `attn lesson ...`: output, and every error path's message and exit status."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tracer.lessons.loader import shipped_dir

Attn = Callable[..., tuple[int, str, str]]
SHIPPED = sorted(shipped_dir().glob("*.yaml"))

GOOD = """\
title: A lesson of my own
summary: One narration.
steps:
  - narration: Hello.
"""


def shipped_titles() -> list[str]:
    return [yaml.safe_load(path.read_text(encoding="utf-8"))["title"] for path in SHIPPED]


@pytest.fixture
def lesson_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "10_mine.yaml").write_text(GOOD, encoding="utf-8")
    (folder / "20_broken.yaml").write_text("- not a lesson\n", encoding="utf-8")
    (folder / "notes.txt").write_text("not a lesson file", encoding="utf-8")
    return folder


# attn lessons ----------------------------------------------------------------


def test_lessons_lists_the_shipped_lessons_numbered_and_titled(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path / "data"))  # no progress yet
    status, out, err = attn("lessons")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "Shipped lessons:"
    assert len(lines) == 1 + len(SHIPPED)
    for number, (line, path, title) in enumerate(
        zip(lines[1:], SHIPPED, shipped_titles(), strict=True), start=1
    ):
        assert line.startswith(f"{number:>3}. {path.stem}")
        assert line.endswith(f"  {title}  (not started)")  # the progress, as the README says


def test_lessons_dir_adds_its_lessons_after_the_shipped_ones(
    lesson_dir: Path, attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path / "data"))  # no progress yet
    status, out, err = attn("lessons", "--lessons-dir", str(lesson_dir))
    assert (status, err) == (0, "")
    lines = out.splitlines()
    first = len(SHIPPED) + 1
    assert lines[-3] == f"Lessons in {lesson_dir}:"
    assert lines[-2].split() == [
        f"{first}.", "10_mine", "A", "lesson", "of", "my", "own", "(not", "started)",
    ]  # fmt: skip
    number, name, rest = lines[-1].split(maxsplit=2)
    assert (number, name) == (f"{first + 1}.", "20_broken")
    broken = lesson_dir / "20_broken.yaml"
    assert rest == (
        f"(cannot be loaded: {broken}:1:1: a lesson must be a mapping with title, summary and steps)"
    )


def test_attn_lessons_dir_environment_variable(
    lesson_dir: Path, attn: Attn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_LESSONS_DIR", str(lesson_dir))
    status, out, _ = attn("lessons")
    assert status == 0
    assert f"Lessons in {lesson_dir}:" in out.splitlines()


def test_lessons_dir_that_does_not_exist(tmp_path: Path, attn: Attn) -> None:
    missing = tmp_path / "nowhere"
    assert attn("lessons", "--lessons-dir", str(missing)) == (
        2,
        "",
        f"attn: lessons folder not found: {missing}\n",
    )


# attn lesson check -----------------------------------------------------------


def test_check_reports_ok_for_each_good_lesson(attn: Attn) -> None:
    status, out, err = attn("lesson", "check", *map(str, SHIPPED))
    assert (status, err) == (0, "")
    assert [line.split(": ok (")[0] for line in out.splitlines()] == list(map(str, SHIPPED))


def test_check_goes_on_after_a_broken_lesson(lesson_dir: Path, attn: Attn) -> None:
    broken, good = lesson_dir / "20_broken.yaml", lesson_dir / "10_mine.yaml"
    status, out, err = attn("lesson", "check", str(broken), str(good))
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        f"{broken}:1:1: a lesson must be a mapping with title, summary and steps, not a list",
        f"{good}: ok (1 step)",
    ]


def test_check_with_a_missing_file_is_a_usage_error(tmp_path: Path, attn: Attn) -> None:
    missing = tmp_path / "missing.yaml"
    assert attn("lesson", "check", str(missing)) == (
        2,
        "",
        f"attn: lesson file not found: {missing}\n",
    )


def test_check_needs_a_file(attn: Attn) -> None:
    assert attn("lesson", "check") == (
        2,
        "",
        "attn: 'attn lesson check' needs at least one lesson file or folder\n",
    )


def test_check_accepts_names_and_numbers(attn: Attn) -> None:
    status, out, _ = attn("lesson", "check", "1", "normalising")
    assert status == 0
    assert out.splitlines()[0].startswith(f"{SHIPPED[0]}: ok")
    assert out.splitlines()[1].startswith(f"{SHIPPED[1]}: ok")


# attn lesson run -------------------------------------------------------------


def test_run_plain_prints_narration_tensors_and_answers(attn: Attn) -> None:
    status, out, err = attn("lesson", "run", "01_dot_products", "--plain")
    assert (status, err) == (0, "")
    assert out.startswith("# Dot products as alignment\n")
    # Seed 001's scores for the query "journey", labelled with tokens.
    assert "journey   0.9544   1.4950   1.4754   0.8434   0.7070   1.0865" in out
    assert 'Quiz: Work out the dot product of "Your" and "journey". What is it?' in out
    assert "Answer: 0.9544 (answers within 0.005 count as right)" in out


def test_run_in_a_pipe_prints_text_without_plain(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tracer", "lesson", "run", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("# Vectorising: the same numbers from matrix products\n")
    assert "Traceback" not in result.stdout


def test_run_an_unknown_lesson_suggests_the_closest(attn: Attn) -> None:
    assert attn("lesson", "run", "dot_product", "--plain") == (
        2,
        "",
        "attn: unknown lesson 'dot_product' (did you mean 'dot_products'?); "
        "see 'attn lessons' for the list\n",
    )


@pytest.mark.parametrize("argv", [("lesson", "run"), ("lesson", "run", "1", "2")])
def test_run_takes_exactly_one_lesson(argv: tuple[str, ...], attn: Attn) -> None:
    assert attn(*argv) == (
        2,
        "",
        "attn: 'attn lesson run' takes one lesson: a name, a number or a .yaml path\n",
    )


def test_run_by_path_from_a_lessons_dir(lesson_dir: Path, attn: Attn) -> None:
    status, out, _ = attn("lesson", "run", "mine", "--plain", "--lessons-dir", str(lesson_dir))
    assert status == 0
    assert out.splitlines()[:3] == ["# A lesson of my own", "", "One narration."]


# attn lesson new -------------------------------------------------------------


def test_new_writes_a_starter_that_passes_check(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "first.yaml"
    status, out, err = attn("lesson", "new", str(path))
    assert (status, err) == (0, "")
    assert out == (
        f"wrote {path}; check it with: attn lesson check {path}\n"
        f"for completion in your editor, run: attn lesson schema --write {tmp_path} "
        "(its first line names lesson.schema.json)\n"
    )
    text = path.read_text(encoding="utf-8")
    # The schema is named relative to the lesson, so the folder can be shared as it is.
    assert text.startswith("# yaml-language-server: $schema=lesson.schema.json\n")
    assert attn("lesson", "schema", "--write", str(tmp_path))[0] == 0
    assert (tmp_path / "lesson.schema.json").is_file()
    status, out, _ = attn("lesson", "check", str(path))
    assert (status, out) == (0, f"{path}: ok (7 steps)\n")
    status, out, _ = attn("lesson", "run", str(path), "--plain")
    assert status == 0 and out.count("Answer: ") == 2
    assert "Hint 1: Multiply the two embeddings" in out and "{{" not in out


def test_new_says_nothing_about_a_schema_already_there(tmp_path: Path, attn: Attn) -> None:
    assert attn("lesson", "schema", "--write", str(tmp_path))[0] == 0
    path = tmp_path / "second.yaml"
    assert attn("lesson", "new", str(path)) == (
        0,
        f"wrote {path}; check it with: attn lesson check {path}\n",
        "",
    )


def test_new_never_overwrites(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("precious", encoding="utf-8")
    assert attn("lesson", "new", str(path)) == (
        2,
        "",
        f"attn: {path} already exists; not overwriting it (choose another name)\n",
    )
    assert path.read_text(encoding="utf-8") == "precious"


def test_new_needs_a_yaml_name(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "lesson.txt"
    assert attn("lesson", "new", str(path)) == (
        2,
        "",
        f"attn: {path}: lesson files end in .yaml; try {tmp_path / 'lesson.yaml'}\n",
    )
    assert not path.exists()


def test_new_in_a_missing_folder(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "no" / "lesson.yaml"
    assert attn("lesson", "new", str(path)) == (
        2,
        "",
        f"attn: folder not found: {tmp_path / 'no'}\n",
    )


def test_new_takes_one_path(attn: Attn) -> None:
    assert attn("lesson", "new") == (
        2,
        "",
        "attn: 'attn lesson new' takes one path, for example my_lesson.yaml\n",
    )


# attn lesson schema, attn lesson NAME ----------------------------------------


def test_schema_takes_no_arguments(attn: Attn) -> None:
    assert attn("lesson", "schema", "x") == (
        2,
        "",
        "attn: 'attn lesson schema' takes no arguments (--write DIR writes a file)\n",
    )


def test_a_lesson_name_alone_opens_the_tui(
    attn: Attn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[argparse.Namespace] = []

    def open_lesson(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    monkeypatch.setattr("tracer.cli.app_cmd.open_lesson", open_lesson)
    status, _, _ = attn("lesson", "02_normalising", "--lessons-dir", str(tmp_path))
    assert status == 0
    assert [(a.lesson, a.lessons_dir, a.plugins_dir) for a in seen] == [
        ("02_normalising", [str(tmp_path)], [])
    ]


def test_without_the_tui_a_lesson_name_says_what_to_do(
    attn: Attn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tracer.tui.launch", None)  # makes the import fail
    assert attn("lesson", "1") == (
        2,
        "",
        "attn: the lesson viewer is not available in this installation; "
        "use 'attn lesson run 1 --plain'\n",
    )


def test_a_lesson_name_then_more_words(attn: Attn) -> None:
    assert attn("lesson", "1", "2") == (
        2,
        "",
        "attn: unknown lesson command '1'; expected check, run, new, schema or export, "
        "or a single lesson to open\n",
    )


def test_lesson_alone_is_a_usage_error(attn: Attn) -> None:
    assert attn("lesson") == (
        2,
        "",
        "attn lesson: error: the following arguments are required: COMMAND|LESSON "
        "(see 'attn lesson --help')\n",
    )


def test_variants_from_plugins_dir_can_be_used_by_lessons(tmp_path: Path, attn: Attn) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "doubled.py").write_text(
        "from tracer import Variant, hookimpl, stage\n"
        "\n"
        "def run(ctx):\n"
        "    doubled = ctx.inputs * 2\n"
        "    yield stage('doubled', 'Twice the inputs', doubled=doubled)\n"
        "    return doubled\n"
        "\n"
        "@hookimpl\n"
        "def register_variants(register):\n"
        "    register(Variant(name='doubled', title='Doubled', run=run, stages=('doubled',),\n"
        "                     uses_weights=False))\n",
        encoding="utf-8",
    )
    lesson = tmp_path / "doubled.yaml"
    lesson.write_text(
        "title: T\nsummary: S\nsteps:\n"
        "  - quiz:\n"
        "      question: twice 0.43?\n"
        "      answer: {variant: doubled, stage: doubled, cell: [Your, 0]}\n",
        encoding="utf-8",
    )
    status, out, _ = attn("lesson", "check", str(lesson))
    assert status == 1
    assert out.startswith(
        f"{lesson}:6:25: unknown variant 'doubled'; if it comes from a plugin, that plugin is "
        "not installed (install it, or give its folder with --plugins-dir); known variants: "
    )
    status, out, _ = attn("lesson", "check", str(lesson), "--plugins-dir", str(plugins))
    assert (status, out) == (0, f"{lesson}: ok (1 step)\n")
    status, out, _ = attn("lesson", "run", str(lesson), "--plain", "--plugins-dir", str(plugins))
    assert status == 0
    assert "Answer: 0.8600 (answers within 0.01 count as right)" in out


def test_lessons_json_lists_each_lesson_with_its_progress(
    attn: Attn, lesson_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path / "data"))
    mine = lesson_dir / "10_mine.yaml"
    answers = {"a": {"response": "1", "right": True}, "b": {"response": "2", "right": False}}
    # As an earlier version wrote it (no "seen"): the saved step counts as reached.
    saved = {"step": 0, "sub": 0, "steps": 1, "title": "", "finished": False, "answers": answers}
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "progress.json").write_text(
        json.dumps({"version": 1, "lessons": {str(mine.resolve()): saved}}), encoding="utf-8"
    )
    status, out, err = attn("lessons", "--json", "--lessons-dir", str(lesson_dir))
    assert status == 0, err
    listed = json.loads(out)
    assert [entry["number"] for entry in listed] == list(range(1, len(SHIPPED) + 3))
    assert [entry["title"] for entry in listed[: len(SHIPPED)]] == shipped_titles()
    first = listed[0]
    assert first["name"] == SHIPPED[0].stem
    assert first["progress"] == {"seen": 0, "answered": 0, "right": 0, "done": False}
    own = next(entry for entry in listed if entry["name"] == "10_mine")
    assert own["title"] == "A lesson of my own"
    assert own["progress"] == {"seen": 1, "answered": 2, "right": 1, "done": False}
    broken = next(entry for entry in listed if entry["name"] == "20_broken")
    assert broken["problem"]


def test_lessons_json_says_what_lesson_check_says_of_each(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "10_mine.yaml").write_text(GOOD, encoding="utf-8")
    # YAML the listing reads, with a title, that only running the check refuses.
    (folder / "20_refused.yaml").write_text(
        "title: Refused\nsummary: s\ninputs: four-words\nsteps:\n"
        "  - show: {variant: naive-loop, stage: scors}\n"
        "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores, cell: [9, 0]}}\n",
        encoding="utf-8",
    )
    (folder / "30_warned.yaml").write_text(
        "title: Warned\nsummary: s\n"
        "inputs: {tokens: [the, cat, the], embeddings: [[1, 0], [0, 1], [1, 1]]}\n"
        "steps:\n"
        "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores, cell: [the, cat]}}\n",
        encoding="utf-8",
    )
    (folder / "40_malformed.yaml").write_text("title: t\nsummary: [\n", encoding="utf-8")
    status, out, err = attn("lessons", "--json", "--lessons-dir", str(folder))
    assert status == 0, err
    listed = {entry["name"]: entry for entry in json.loads(out)}
    for path in SHIPPED:  # every shipped lesson passes the check
        entry = listed[path.stem]
        assert (entry["ok"], entry["problem"], entry["problems"]) == (True, None, []), entry
    for name in ("10_mine", "20_refused", "30_warned", "40_malformed"):
        entry = listed[name]
        checked, said, _ = attn("lesson", "check", str(folder / f"{name}.yaml"))
        lines = said.splitlines()
        problems = [line for line in lines if ": warning: " not in line and ": ok (" not in line]
        warnings = [line for line in lines if ": warning: " in line]
        assert entry["problems"] == problems, name
        assert entry["warnings"] == warnings, name
        assert entry["problem"] == (problems[0] if problems else None)
        assert entry["ok"] is (checked == 0)
    assert listed["20_refused"]["title"] == "Refused" and len(listed["20_refused"]["problems"]) == 2
    assert "stage 'scors'" in listed["20_refused"]["problem"]
    assert listed["30_warned"]["ok"] and len(listed["30_warned"]["warnings"]) == 1
    assert "malformed YAML" in listed["40_malformed"]["problem"]


def test_interactive_goes_with_running_a_lesson_only(attn: Attn) -> None:
    status, _out, err = attn("lesson", "export", "1", "--to", "md", "-i")
    assert status == 2 and "-i (--interactive) goes with 'attn lesson run" in err
