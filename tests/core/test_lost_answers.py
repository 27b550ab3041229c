"""Nothing the learner saved is lost: locked merges, set-aside copies kept, atomic exports,
symlinks kept, a document on stdout that plugin threads cannot reach, exports where asked."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import forked
from tracer.learner.exercises import PROGRESS_FILE, Progress
from tracer.session.progress import LessonProgress, ProgressStore, QuizAnswer

Attn = Callable[..., tuple[int, str, str]]

LESSON = """\
title: A lesson of my own
summary: One narration.
steps:
  - narration: Hello.
"""


def test_two_app_instances_saving_at_once_keep_each_others_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = ProgressStore(tmp_path), ProgressStore(tmp_path)
    read = ProgressStore._read
    second_saved = threading.Event()

    def slow_read(self: ProgressStore) -> object:
        found = read(self)
        if self is first:
            # The other instance saves between this read and this write (unless it must wait).
            worker = threading.Thread(target=save_second)
            worker.start()
            second_saved.wait(0.5)
        return found

    def save_second() -> None:
        second.save("b", LessonProgress(answers={"q2": QuizAnswer("2", True)}))
        second_saved.set()

    monkeypatch.setattr(ProgressStore, "_read", slow_read)
    first.save("a", LessonProgress(answers={"q1": QuizAnswer("1", True)}))
    second_saved.wait(10)
    monkeypatch.setattr(ProgressStore, "_read", read)
    saved = ProgressStore(tmp_path).lessons
    assert saved["a"].answers["q1"].response == "1"
    assert saved["b"].answers["q2"].response == "2"


def test_a_symlinked_progress_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "synced" / "progress.json"
    real.parent.mkdir()
    real.write_text('{"version": 1, "lessons": {}}')
    data = tmp_path / "data"
    data.mkdir()
    (data / "progress.json").symlink_to(real)
    ProgressStore(data).save("a", LessonProgress(step=3))
    assert (data / "progress.json").is_symlink()
    assert json.loads(real.read_text())["lessons"]["a"]["step"] == 3


@pytest.fixture
def practice(tmp_path: Path, attn: Attn) -> Path:
    folder = tmp_path / "practice"
    status, _, err = attn("exercises", "init", str(folder))
    assert status == 0, err
    return folder


def test_a_second_corruption_never_overwrites_the_first_copy(practice: Path) -> None:
    path = practice / PROGRESS_FILE
    path.write_bytes(b"first damage {")
    Progress.load(practice, warn=lambda _: None)
    path.write_bytes(b"second damage [")
    Progress.load(practice, warn=lambda _: None)
    assert (practice / f"{PROGRESS_FILE}.corrupt").read_bytes() == b"first damage {"
    assert (practice / f"{PROGRESS_FILE}.corrupt.1").read_bytes() == b"second damage ["


def test_a_symlinked_exercises_progress_file_stays_a_symlink(practice: Path) -> None:
    path = practice / PROGRESS_FILE
    real = practice.parent / "kept.json"
    real.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(real)
    progress = Progress.load(practice)
    progress.done.append("01_dot_products")
    progress.save(practice)
    assert path.is_symlink()
    assert json.loads(real.read_text())["done"] == ["01_dot_products"]


def _small_files() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (60, 60))


def test_export_force_on_a_full_disk_leaves_the_old_file_whole(tmp_path: Path) -> None:
    lesson = tmp_path / "mine.yaml"
    lesson.write_text(LESSON)
    output = tmp_path / "mine.md"
    output.write_text("the learner's own notes\n")
    # Forked (tests/forked.py): the limit is set in the child before attn runs, as a
    # subprocess's preexec_fn sets it before the interpreter starts.
    result = forked.run_attn(
        "lesson", "export", str(lesson), "--to", "md", "-o", str(output), "--force",
        timeout=120,
        preexec_fn=_small_files,  # the export is longer than 60 bytes: the "disk" fills up
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(f"attn: cannot write {output}: ")
    assert output.read_text() == "the learner's own notes\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_plugins_chdir_at_import_does_not_move_the_export(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "wanders.py").write_text(f"import os\nos.chdir({str(elsewhere)!r})\n")
    (tmp_path / "mine.yaml").write_text(LESSON)
    # Forked (tests/forked.py) in its own working folder: the plugin's chdir happens in the
    # child, and relative paths are resolved there as in a fresh interpreter.
    result = forked.run_attn(
        "lesson", "export", "mine.yaml", "--to", "md", "-o", "out.md",
        "--plugins-dir", str(folder),
        timeout=120,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.md").read_text().startswith("# A lesson of my own")
    assert not (elsewhere / "out.md").exists()


PRINTS_FOREVER = """\
import threading, time

def chatter():
    while True:
        print("chatter from a plugin thread " * 20)
        time.sleep(0.001)

threading.Thread(target=chatter, daemon=True).start()
"""


def test_a_printing_thread_from_a_plugin_cannot_corrupt_the_json(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "chatty.py").write_text(PRINTS_FOREVER)
    for argv in (["trace", "vectorized"], ["plugins"]):
        # A real interpreter: whether the thread gets to print before the end depends on
        # how long the process takes to finish, which a forked attn (ending with os._exit)
        # shortens; forked, "chatter" was missing from stderr one run in three.
        result = subprocess.run(
            [sys.executable, "-m", "tracer", *argv, "--json", "--plugins-dir", str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert result.returncode == 0, result.stderr[-2000:]
        json.loads(result.stdout)  # one whole document, nothing else
        assert "chatter" in result.stderr
