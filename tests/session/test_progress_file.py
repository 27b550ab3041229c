"""The progress file never loses data: a later version's fields kept, links followed or
refused (never replaced), anything but a regular file refused without waiting on it, and a
big file saved a lesson at a time (a journal) while today's files read as they are."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tracer.session import progress as progress_module
from tracer.session.progress import (
    LessonProgress,
    ProgressStore,
    QuizAnswer,
    load_settings,
    save_settings,
)


def bounded(call: Callable[[], Any]) -> Any:
    """``call()`` in a thread: a call that blocks (a FIFO opened for reading) fails the test
    instead of hanging the suite."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "blocked"
    return result[0]


LATER = {
    "version": 99,
    "sync": {"device": "laptop", "clock": [1, 2, 3]},
    "lessons": {
        "known": {
            "step": 2,
            "sub": 0,
            "steps": 5,
            "seen": 3,
            "title": "Dot products",
            "finished": False,
            "updated": 10.0,
            "bookmarks": [1, 4],
            "answers": {"q1": {"response": "2", "right": True, "tries": 3}},
        },
        "reshaped": ["a later version's record", 7],
    },
}


def test_a_later_versions_file_is_read_where_it_can_be_and_kept_whole(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    path = data_dir / "progress.json"
    path.write_text(json.dumps(LATER), encoding="utf-8")
    store = ProgressStore()
    assert store.warning is None and not (data_dir / "progress.json.corrupt").exists()
    known = store.get("known")
    assert known is not None and (known.step, known.seen) == (2, 3)
    assert known.answers == {"q1": QuizAnswer("2", True)}
    assert store.get("reshaped") is None  # not readable here, so not shown

    assert store.save("mine", LessonProgress(step=1)) is None
    known.step = 4
    assert store.save("known", known) is None
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 99  # never lowered
    assert data["sync"] == LATER["sync"]
    assert data["lessons"]["reshaped"] == LATER["lessons"]["reshaped"]
    record = data["lessons"]["known"]
    assert record["step"] == 4 and record["bookmarks"] == [1, 4]
    assert record["answers"]["q1"] == {"response": "2", "right": True, "tries": 3}
    assert data["lessons"]["mine"]["step"] == 1

    # The record it cannot read is not saved over: it says so once, and keeps it.
    first = store.save("reshaped", LessonProgress(step=9))
    assert first is not None and "later version" in first
    assert store.save("reshaped", LessonProgress(step=9)) is None  # said once
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["lessons"]["reshaped"] == LATER["lessons"]["reshaped"]


def test_todays_damaged_record_is_still_set_aside(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    text = json.dumps({"version": 1, "lessons": {"x": ["not", "a", "record"]}})
    (data_dir / "progress.json").write_text(text, encoding="utf-8")
    store = ProgressStore()
    assert store.warning is not None and "damaged" in store.warning
    assert (data_dir / "progress.json.corrupt").read_text(encoding="utf-8") == text


def test_a_dangling_symlink_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "synced" / "progress.json"
    target.parent.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "progress.json").symlink_to(target)
    assert ProgressStore(data).save("a", LessonProgress(step=3)) is None
    assert (data / "progress.json").is_symlink()
    assert json.loads(target.read_text(encoding="utf-8"))["lessons"]["a"]["step"] == 3


def test_a_symlink_loop_is_one_warning_and_no_write(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "progress.json").symlink_to(data / "other.json")
    (data / "other.json").symlink_to(data / "progress.json")
    store = ProgressStore(data)
    assert store.warning is not None and "symlink loop" in store.warning
    assert "not saved" in store.warning
    assert store.save("a", LessonProgress(step=1)) is None  # already said: not again
    assert store.save("a", LessonProgress(step=2)) is None
    assert os.readlink(data / "progress.json") == str(data / "other.json")
    assert os.readlink(data / "other.json") == str(data / "progress.json")
    assert sorted(p.name for p in data.iterdir()) == ["other.json", "progress.json"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_anything_but_a_regular_file_is_refused_at_once(data_dir: Path, kind: str) -> None:
    data_dir.mkdir(parents=True)
    path = data_dir / "progress.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    store = bounded(ProgressStore)
    words = "a FIFO" if kind == "fifo" else "a folder"
    assert store.warning is not None and words in store.warning, store.warning
    assert bounded(lambda: store.save("a", LessonProgress(step=1))) is None
    assert path.is_fifo() if kind == "fifo" else path.is_dir()  # left as it was
    assert not list(data_dir.glob("progress.json.*"))


def test_a_fifo_for_settings_is_none_and_is_left_alone(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    os.mkfifo(data_dir / "settings.json")
    assert bounded(load_settings) == {}
    warning = bounded(lambda: save_settings({"theme": "nord"}))
    assert warning is not None and "a FIFO" in warning
    assert (data_dir / "settings.json").is_fifo()


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "nord", "other": 1}', encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").symlink_to(real)
    settings = load_settings(data)
    settings["theme"] = "gruvbox"
    assert save_settings(settings, data) is None
    assert (data / "settings.json").is_symlink()
    assert json.loads(real.read_text(encoding="utf-8")) == {"theme": "gruvbox", "other": 1}


# A big file: saved through the journal ---------------------------------------------------


@pytest.fixture
def big(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A progress file of 200 lessons, in today's format, over the journal's threshold."""
    monkeypatch.setattr(progress_module, "WHOLE_BELOW", 4096)
    data_dir.mkdir(parents=True)
    lessons = {
        f"lesson-{n}": LessonProgress(step=n % 7, steps=9, title=f"L{n}", updated=float(n))
        for n in range(200)
    }
    document = {"version": 1, "lessons": {k: p.as_json() for k, p in lessons.items()}}
    (data_dir / "progress.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
    return data_dir / "progress.json"


def test_a_big_file_is_not_rewritten_to_save_one_lesson(big: Path) -> None:
    before = big.read_bytes()
    inode = big.stat().st_ino
    store = ProgressStore()
    saved = LessonProgress(step=5, steps=9, answers={"q": QuizAnswer("1", True)})
    assert store.save("lesson-3", saved) is None
    assert store.save("new", LessonProgress(step=1)) is None
    assert big.read_bytes() == before and big.stat().st_ino == inode  # untouched
    journal = big.with_name("progress.json.journal")
    lines = journal.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["lesson"] for line in lines] == ["lesson-3", "new"]
    again = ProgressStore()
    assert again.get("lesson-3") == store.get("lesson-3")
    assert again.get("lesson-3").answers == {"q": QuizAnswer("1", True)}  # type: ignore[union-attr]
    assert again.get("new") is not None and again.get("lesson-199") is not None


def test_two_instances_on_a_big_file_keep_each_others_answers(big: Path) -> None:
    first, second = ProgressStore(), ProgressStore()
    first.save("lesson-1", LessonProgress(step=2, answers={"a": QuizAnswer("1", True)}))
    second.save("lesson-1", LessonProgress(step=4, answers={"b": QuizAnswer("2", False)}))
    second.save("lesson-2", LessonProgress(step=1))
    first.save("lesson-9", LessonProgress(step=3))
    # Each instance saw the other's saves as it saved (no need to read the document again).
    seen_by_first = first.get("lesson-1")
    assert seen_by_first is not None and set(seen_by_first.answers) == {"a", "b"}
    assert seen_by_first.step == 4  # the newer position
    after = ProgressStore()
    lesson = after.get("lesson-1")
    assert lesson is not None and set(lesson.answers) == {"a", "b"} and lesson.step == 4
    assert after.get("lesson-2") is not None and after.get("lesson-9") is not None


def test_the_journal_is_folded_into_the_file_when_it_grows(big: Path) -> None:
    store = ProgressStore()
    journal = big.with_name("progress.json.journal")
    saves = 0
    while journal.exists() or saves == 0:
        saves += 1
        store.save(f"lesson-{saves % 200}", LessonProgress(step=saves % 9, title="x" * 40))
        assert saves < 1000, "never compacted"
    assert saves > 1  # appended a while before folding
    data = json.loads(big.read_text(encoding="utf-8"))
    assert len(data["lessons"]) == 200
    last = data["lessons"][f"lesson-{saves % 200}"]
    assert last["step"] == saves % 9
    again = ProgressStore()
    assert {k: p.step for k, p in again.lessons.items()} == {
        k: p.step for k, p in store.lessons.items()
    }


def test_a_line_a_killed_writer_left_unfinished_is_skipped(big: Path) -> None:
    journal = big.with_name("progress.json.journal")
    good = {"lesson": "lesson-5", "progress": LessonProgress(step=6, updated=1e12).as_json()}
    journal.write_text(json.dumps(good) + '\n{"lesson": "lesson-6", "progr', encoding="utf-8")
    store = ProgressStore()
    assert store.get("lesson-5").step == 6  # type: ignore[union-attr]
    assert store.save("lesson-7", LessonProgress(step=2)) is None
    lines = journal.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["lesson"] == "lesson-7"  # on a line of its own
    again = ProgressStore()
    assert again.get("lesson-7").step == 2  # type: ignore[union-attr]
    assert again.get("lesson-5").step == 6  # type: ignore[union-attr]


def test_a_stale_copy_never_sets_back_a_newer_position(data_dir: Path) -> None:
    early, late = ProgressStore(), ProgressStore()
    late.save("x", LessonProgress(step=1))
    early.lessons["x"] = LessonProgress(step=0, updated=0.0)  # loaded before late saved
    late.save("x", LessonProgress(step=6))
    early.save("y", LessonProgress(step=2))  # saving another lesson writes x too
    x = ProgressStore().get("x")
    assert x is not None and x.step == 6


@pytest.mark.parametrize("way", ["whole", "journal"])
def test_two_processes_saving_at_once_lose_nothing(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    if way == "journal":
        monkeypatch.setattr(progress_module, "WHOLE_BELOW", 2048)
    data_dir.mkdir(parents=True)
    children = []
    for name in ("left", "right"):
        pid = os.fork()
        if pid == 0:  # each process saves its own lessons, and its answer to a shared one
            status = 1
            try:
                store = ProgressStore()
                for n in range(40):
                    store.save(f"{name}-{n}", LessonProgress(step=n % 5, title="t" * 30))
                    shared = LessonProgress(answers={name: QuizAnswer(str(n), True)})
                    store.save("shared", shared)
                status = 0
            finally:
                os._exit(status)
        children.append(pid)
    for pid in children:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    store = ProgressStore()
    assert {f"{side}-{n}" for side in ("left", "right") for n in range(40)} <= set(store.lessons)
    shared = store.get("shared")
    assert shared is not None and set(shared.answers) == {"left", "right"}


def test_journal_lines_it_cannot_read_are_kept_when_it_is_folded(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = big.with_name("progress.json.journal")
    later = '{"lesson": "lesson-4", "progress": ["a later version\'s record"]}\n'
    journal.write_text(later, encoding="utf-8")
    store = ProgressStore()
    monkeypatch.setattr(progress_module, "WHOLE_BELOW", 1 << 40)  # the next save folds
    assert store.save("lesson-8", LessonProgress(step=4)) is None
    assert not journal.exists()
    assert big.with_name("progress.json.journal.corrupt").read_text(encoding="utf-8") == later
    assert ProgressStore().get("lesson-8").step == 4  # type: ignore[union-attr]


def test_a_symlinked_big_file_keeps_its_journal_beside_its_target(
    big: Path, tmp_path: Path
) -> None:
    synced = tmp_path / "synced"
    synced.mkdir()
    target = synced / "progress.json"
    big.rename(target)
    big.symlink_to(target)
    store = ProgressStore()
    assert store.get("lesson-1") is not None
    assert store.save("lesson-1", LessonProgress(step=6)) is None
    assert big.is_symlink()
    assert (synced / "progress.json.journal").exists()
    assert not big.with_name("progress.json.journal").exists()
    assert ProgressStore().get("lesson-1").step == 6  # type: ignore[union-attr]
