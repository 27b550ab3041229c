"""Exercises: stubs that never overwrite, a watcher that moves on, progress and hints."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tracer.errors import EXIT_OK, EXIT_PROBLEMS
from tracer.learner.exercises.workbook import (
    EXERCISES,
    PROGRESS_FILE,
    Progress,
    check_exercise,
    watch,
)
from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]
SOLUTIONS = Path(__file__).parent / "solutions"
N = len(EXERCISES)
"""How many exercises there are (the watcher and the list count them)."""


@pytest.fixture
def folder(tmp_path: Path, attn: Attn) -> Path:
    target = tmp_path / "practice"
    status, _, err = attn("exercises", "init", str(target))
    assert status == 0, err
    return target


# Induction and model run trained models rather than a function a learner writes.
MODERN = {"induction", "model"}


@pytest.mark.lists_variants
def test_one_exercise_per_lesson_idea_and_per_variant(host: PluginHost) -> None:
    variants = {e.variant for e in EXERCISES}
    assert variants == set(host.variants) - MODERN
    assert [e.number for e in EXERCISES] == list(range(1, len(EXERCISES) + 1))


def test_init_writes_numbered_stubs_with_docstrings_and_todos(folder: Path) -> None:
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([e.filename for e in EXERCISES] + [PROGRESS_FILE])
    for exercise in EXERCISES:
        text = (folder / exercise.filename).read_text()
        assert text.startswith(f'"""Exercise {exercise.number}: ')
        assert "TODO" in text or exercise.slug == "07_fix_the_mistakes"
        compile(text, exercise.filename, "exec")


def test_init_never_overwrites_a_learners_file(folder: Path, attn: Attn) -> None:
    mine = folder / "03_vectorising.py"
    mine.write_text("# my work\n")
    (folder / "05_causal_mask.py").unlink()
    status, out, _ = attn("exercises", "init", str(folder))
    assert status == 0
    assert mine.read_text() == "# my work\n"
    assert f"  kept   {mine}\n" in out
    assert f"  wrote  {folder / '05_causal_mask.py'}\n" in out
    assert f"({len(EXERCISES) - 1} already there, left as they were)" in out


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.slug)
def test_stub_is_not_done_and_solution_passes(folder: Path, exercise) -> None:  # type: ignore[no-untyped-def]
    stub = check_exercise(folder, exercise)
    assert stub.status == EXIT_PROBLEMS
    shutil.copy(SOLUTIONS / exercise.filename, folder / exercise.filename)
    solved = check_exercise(folder, exercise)
    assert solved.status == EXIT_OK, solved.text


def test_fix_the_mistakes_names_all_three(folder: Path) -> None:
    outcome = check_exercise(folder, EXERCISES[6])
    assert "[discarded-masked-fill]" in outcome.text
    assert "[scaling]" in outcome.text
    assert "[softmax-dim]" in outcome.text


def test_watch_once_reports_and_records_progress(folder: Path, attn: Attn) -> None:
    status, out, _ = attn("exercises", "watch", str(folder), "--once")
    assert status == 1
    assert out.startswith(f"exercise 1/{N}: 01_dot_products.py - Dot products as alignment")
    assert "is waiting for you: replace the TODOs." in out
    shutil.copy(SOLUTIONS / "01_dot_products.py", folder / "01_dot_products.py")
    status, out, _ = attn("exercises", "watch", str(folder), "--once")
    assert status == 0
    assert f"passed: 1/{N} done. Next: 02_normalising.py" in out
    assert json.loads((folder / PROGRESS_FILE).read_text())["done"] == ["01_dot_products"]
    status, out, _ = attn("exercises", "watch", str(folder), "--once")
    assert out.startswith(f"exercise 2/{N}: 02_normalising.py")


def test_watch_rechecks_on_save_and_moves_on(folder: Path) -> None:
    shown: list[str] = []
    saves = iter(["01_dot_products.py", "02_normalising.py"])

    def sleep(_: float) -> None:
        # The learner saves the current exercise, solved, while the watcher waits.
        name = next(saves, None)
        if name is not None:
            shutil.copy(SOLUTIONS / name, folder / name)

    status = watch(folder, shown.append, polls=3, sleep=sleep)
    text = "\n".join(shown)
    assert status == EXIT_PROBLEMS
    assert text.count(f"exercise 1/{N}") == 2 and f"passed: 1/{N} done" in text
    assert f"passed: 2/{N} done. Next: 03_vectorising.py" in text
    assert shown[-2].startswith(f"exercise 3/{N}")


def test_watch_with_everything_done(folder: Path) -> None:
    # Every solution passing is checked one by one above, and moving on after a pass by
    # test_watch_rechecks_on_save_and_moves_on: here the watcher passes the last exercise
    # (the others already done) and says that everything is done.
    for exercise in EXERCISES:
        shutil.copy(SOLUTIONS / exercise.filename, folder / exercise.filename)
    Progress(done=[e.slug for e in EXERCISES[:-1]]).save(folder)
    shown: list[str] = []
    assert watch(folder, shown.append, polls=0) == EXIT_OK
    assert shown[0].startswith(f"exercise {N}/{N}: {EXERCISES[-1].filename}")
    assert shown[-2:] == [f"passed: {N}/{N} done.", f"All {N} exercises are done. Well done!"]
    assert json.loads((folder / PROGRESS_FILE).read_text())["done"] == [e.slug for e in EXERCISES]


def test_hints_come_one_at_a_time(folder: Path, attn: Attn) -> None:
    first = attn("exercises", "hint", str(folder))[1]
    second = attn("exercises", "hint", str(folder))[1]
    third = attn("exercises", "hint", str(folder))[1]
    assert first.startswith("01_dot_products.py, hint 1/2:\n  torch.dot(a, b)")
    assert second.startswith("01_dot_products.py, hint 2/2 (that was the last one):")
    assert third == second
    status, out, _ = attn("exercises", "hint", str(folder), "4")
    assert status == 0 and out.startswith("04_trainable_qkv.py, hint 1/3:")
    assert json.loads((folder / PROGRESS_FILE).read_text())["hints"] == {
        "01_dot_products": 2,
        "04_trainable_qkv": 1,
    }


def test_list_shows_progress(folder: Path, attn: Attn) -> None:
    shutil.copy(SOLUTIONS / "01_dot_products.py", folder / "01_dot_products.py")
    attn("exercises", "watch", str(folder), "--once")
    status, out, _ = attn("exercises", "list", str(folder))
    lines = out.splitlines()
    assert status == 0
    assert lines[0].split()[:2] == ["done", "01_dot_products.py"]
    assert lines[1].split()[:2] == ["next", "02_normalising.py"]
    assert lines[-1] == f"1/{N} done"


def test_errors_are_one_line(folder: Path, attn: Attn, tmp_path: Path) -> None:
    status, _, err = attn("exercises", "watch", str(tmp_path / "nowhere"), "--once")
    assert status == 2
    assert (
        err
        == f"attn: exercise folder not found: {tmp_path / 'nowhere'} (run 'attn exercises init {tmp_path / 'nowhere'}')\n"
    )
    status, _, err = attn("exercises", "hint", str(folder), "42")
    assert status == 2 and err.startswith("attn: no exercise '42'")


def test_watch_shows_the_edited_line_not_a_stale_one(folder: Path) -> None:
    path = folder / "01_dot_products.py"
    solution = (SOLUTIONS / "01_dot_products.py").read_text()
    path.write_text(solution.replace("dim=-1)", "dim=0) "))
    first = check_exercise(folder, EXERCISES[0])
    assert "01_dot_products.py:11  weights = torch.softmax(scores, dim=0)\n" in first.text
    # The learner edits line 11 (same file size): the report must show the new text.
    path.write_text(solution.replace("dim=-1)", "dim=-2)"))
    second = check_exercise(folder, EXERCISES[0])
    assert "01_dot_products.py:11  weights = torch.softmax(scores, dim=-2)\n" in second.text


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"done": [\n', "progress file is not valid JSON: Expecting value"),
        (b"\x89PNG\r\n\x1a\n\x00\xff", "progress file is not UTF-8 text (byte 0)"),
        (b"[" * 100_000 + b"]" * 100_000, "progress file is nested too deeply"),
        (b'["01_dot_products"]', "progress file must hold a JSON object"),
        (b'{"done": {"01_dot_products": true}}', "progress file: 'done' and 'skipped' must be"),
        (b'{"done": [["01_dot_products"]]}', "progress file: 'done' and 'skipped' must be"),
    ],
)
def test_a_damaged_progress_file_is_set_aside(
    folder: Path, attn: Attn, content: bytes, problem: str
) -> None:
    path = folder / PROGRESS_FILE
    path.write_bytes(content)
    status, out, err = attn("exercises", "list", str(folder))
    assert status == 0 and out.splitlines()[-1] == f"0/{N} done"
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"attn: warning: {path}")
    assert problem in err and err.rstrip().endswith(
        f"(set aside as {PROGRESS_FILE}.corrupt; starting with no progress)"
    )
    assert (folder / f"{PROGRESS_FILE}.corrupt").read_bytes() == content


def test_two_instances_lose_nothing(folder: Path) -> None:
    first, second = Progress.load(folder), Progress.load(folder)
    first.done.append("01_dot_products")
    first.hints["02_normalising"] = 2
    first.save(folder)
    # The second instance never saw the first one's answers; saving merges, not overwrites.
    second.done.append("02_normalising")
    second.hints["02_normalising"] = 1
    second.save(folder)
    data = json.loads((folder / PROGRESS_FILE).read_text())
    assert data["done"] == ["01_dot_products", "02_normalising"]
    assert data["hints"] == {"02_normalising": 2}


def test_stale_temporary_files_are_cleaned_up(folder: Path) -> None:
    stale = folder / f"{PROGRESS_FILE}.999999999.tmp"  # no process has this id
    stale.write_text("{")
    Progress.load(folder).save(folder)
    assert not stale.exists()
    assert [p.name for p in folder.glob("*.tmp")] == []


def test_hint_still_comes_when_progress_cannot_be_written(folder: Path, attn: Attn) -> None:
    path = folder / PROGRESS_FILE
    path.unlink()
    path.mkdir()  # a folder where the file should be: it can be neither read nor replaced
    status, out, err = attn("exercises", "hint", str(folder))
    assert status == 0
    assert out.startswith("01_dot_products.py, hint 1/2:")
    assert "Traceback" not in err
    assert [line.split(":")[0] for line in err.splitlines()] == ["attn", "attn"]
    assert "cannot read" in err and "cannot save progress" in err


def test_watch_keys_hint_list_reset_skip_and_quit(folder: Path) -> None:
    """h, l, r (answered yes), s and q, as a learner in a terminal would press them."""
    path = folder / "01_dot_products.py"
    mine = path.read_text().replace("# TODO", "# my attempt")
    path.write_text(mine)
    pressed = iter(["h", None, "l", "r", "s", "h", "q"])
    questions: list[str] = []

    def keys(_: float) -> str | None:
        return next(pressed, "q")

    def confirm(question: str) -> bool:
        questions.append(question)
        return True

    shown: list[str] = []
    status = watch(folder, shown.append, keys=keys, confirm=confirm, polls=20)
    text = "\n".join(shown)
    assert status == EXIT_OK  # q: the learner chose to stop, with exercise 2 still open
    assert "01_dot_products.py, hint 1/2:\n  torch.dot(a, b)" in text
    assert "  next  01_dot_products.py" in text
    assert questions == [
        "reset 01_dot_products.py to its stub? Your version is kept as a .bak file [y/N]"
    ]
    assert (folder / "01_dot_products.py.bak").read_text() == mine
    assert "# my attempt" not in path.read_text()
    assert "reset 01_dot_products.py; your version is in 01_dot_products.py.bak" in text
    assert "skipped 01_dot_products.py" in text
    assert "02_normalising.py, hint 1/3:" in text  # after the skip, h is about the next one
    data = json.loads((folder / PROGRESS_FILE).read_text())
    assert data["skipped"] == ["01_dot_products"]
    assert data["hints"] == {"02_normalising": 1}  # the reset forgot exercise 1's hints


def test_a_reset_needs_a_yes(folder: Path) -> None:
    path = folder / "01_dot_products.py"
    path.write_text("# my work\n")
    pressed = iter(["r", "q"])
    shown: list[str] = []
    watch(folder, shown.append, keys=lambda _: next(pressed), confirm=lambda _: False, polls=5)
    assert path.read_text() == "# my work\n"
    assert not (folder / "01_dot_products.py.bak").exists()
    assert "not reset" in shown


@pytest.mark.parametrize(
    ("slug", "wrong", "right", "code"),
    [
        ("13_online_softmax", "l = rescale * l", "l = l", "no-rescale"),
        (
            "11_grouped_query",
            "repeat_interleave(group, dim=0)",
            "repeat(group, 1, 1)",
            "heads-tiled",
        ),
        ("10_sliding_window", "(j <= i - window)", "(j < i - window)", "window-off-by-one"),
        ("14_training", " - lr * grads", " + lr * grads", "step-sign"),
    ],
)
def test_new_exercises_name_their_classic_mistake(
    folder: Path, slug: str, wrong: str, right: str, code: str
) -> None:
    """The solution with one classic slip is refused, and the slip is named by what it computes."""
    exercise = next(e for e in EXERCISES if e.slug == slug)
    solution = (SOLUTIONS / exercise.filename).read_text()
    assert wrong in solution
    (folder / exercise.filename).write_text(solution.replace(wrong, right))
    outcome = check_exercise(folder, exercise)
    assert outcome.status == EXIT_PROBLEMS
    assert f"[{code}]" in outcome.text, outcome.text


SCALE = " / head_dim**0.5"
"""Where the solution to exercise 9 divides by √d_k."""


def test_watch_judges_like_attn_check(folder: Path, attn: Attn) -> None:
    """Heads one column wide hide a missing √d_k: the watcher re-checks wider, as attn check does."""
    # Exercise 9 with heads 1 wide (d_out 2 over 2 heads), where dividing by √d_k changes nothing.
    exercise = replace(EXERCISES[8], options={"init": "linear", "heads": 2, "d_out": 2})
    path = folder / exercise.filename
    solution = (SOLUTIONS / exercise.filename).read_text()
    unscaled = solution.replace(SCALE, "")
    assert unscaled != solution
    path.write_text(unscaled)
    outcome = check_exercise(folder, exercise)
    assert outcome.status == EXIT_PROBLEMS, outcome.text
    assert "checked again with --d-out 4" in outcome.text
    status, out, _ = attn(
        "check", str(path), "--against", exercise.variant,
        "--init", "linear", "--heads", "2", "--d-out", "2",
    )  # fmt: skip
    assert status == EXIT_PROBLEMS
    assert out.strip() == outcome.text.strip()


def test_quitting_watch_with_q_in_a_terminal_exits_0(folder: Path) -> None:
    """The whole command, in a pseudo-terminal: the learner presses q at the first prompt."""
    attn = Path(sys.executable).with_name("attn")
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_")}
    child = subprocess.Popen(
        [str(attn), "exercises", "watch", str(folder)],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=env,
        start_new_session=True,
    )
    os.close(secondary)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while b"(watching" not in seen and time.monotonic() < deadline:
            if select.select([primary], [], [], 1)[0]:
                seen += os.read(primary, 4096)
        assert b"(watching 01_dot_products.py" in seen, seen.decode(errors="replace")
        os.write(primary, b"q")
        status = child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        os.close(primary)
    assert status == 0


def test_init_after_a_full_disk_finishes_the_folder_and_keeps_the_learners_files(
    tmp_path: Path,
) -> None:
    import resource

    from tests import forked
    from tracer.learner.exercises.workbook import template

    folder = tmp_path / "ex"
    sizes = [len(template(e).encode()) for e in EXERCISES]
    limit = sorted(sizes)[len(sizes) // 2]  # half the stubs are bigger than a file may grow

    def small_disk() -> None:  # writes past the limit fail (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    first = forked.run_attn("exercises", "init", str(folder), preexec_fn=small_disk)
    assert first.returncode == 2 and "Traceback" not in first.stderr
    assert first.stderr.startswith("attn: cannot write ") and first.stderr.count("\n") == 1
    made = sorted(p.name for p in folder.iterdir() if p.suffix == ".py")
    for name in made:  # whole stubs only, nothing half-made, no temporary left
        exercise = next(e for e in EXERCISES if e.filename == name)
        assert (folder / name).read_text() == template(exercise)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(made) < len(EXERCISES)
    # What an older version left on a full disk: a stub cut short; and a learner's own edits.
    cut, mine = EXERCISES[0], EXERCISES[1]
    (folder / cut.filename).write_text(template(cut)[:100])
    (folder / mine.filename).write_text(template(mine)[:100] + "# mine\n")
    second = forked.run_attn("exercises", "init", str(folder))
    assert second.returncode == 0, second.stderr
    for exercise in EXERCISES:
        text = (folder / exercise.filename).read_text()
        if exercise is mine:
            assert text == template(mine)[:100] + "# mine\n"  # never overwritten
        else:
            assert text == template(exercise), exercise.filename
    assert f"kept   {folder / mine.filename}" in second.stdout
    assert f"wrote  {folder / cut.filename}" in second.stdout
