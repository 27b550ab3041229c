"""The progress store: round trips, the most recent lesson, and damaged files set aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.tui.progress import (
    LessonProgress,
    ProgressStore,
    QuizAnswer,
    lesson_key,
    load_settings,
)


def test_progress_survives_a_restart(data_dir: Path) -> None:
    store = ProgressStore()
    assert store.path == data_dir / "progress.json"
    progress = LessonProgress(step=3, sub=2, steps=7, title="Dot products")
    progress.answers["best"] = QuizAnswer("2", True)
    assert store.save("built-in:01_dot_products", progress) is None
    again = ProgressStore().get("built-in:01_dot_products")
    assert again is not None
    assert (again.step, again.sub, again.steps, again.title) == (3, 2, 7, "Dot products")
    assert again.answers == {"best": QuizAnswer("2", True)}
    assert ProgressStore().warning is None


def test_resume_offers_the_latest_unfinished_lesson(data_dir: Path) -> None:
    store = ProgressStore()
    store.save("a", LessonProgress(step=1))
    store.save("b", LessonProgress(step=2))
    store.save("c", LessonProgress(step=5, finished=True))
    last = ProgressStore().last()
    assert last is not None and last[0] == "b"


def test_a_damaged_file_is_moved_aside_with_a_warning(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    damaged = data_dir / "progress.json"
    damaged.write_text("{not json", encoding="utf-8")
    store = ProgressStore()
    assert store.lessons == {}
    assert store.warning is not None and "damaged" in store.warning
    aside = data_dir / "progress.json.corrupt"
    assert aside.read_text(encoding="utf-8") == "{not json"  # kept, not deleted
    assert not damaged.exists()
    # A second damaged file never overwrites the first one set aside.
    damaged.write_text(json.dumps({"lessons": {"x": {"step": -4}}}), encoding="utf-8")
    assert ProgressStore().warning is not None
    assert (data_dir / "progress.json.corrupt.1").exists()
    assert aside.read_text(encoding="utf-8") == "{not json"
    # Saving works again afterwards.
    assert store.save("x", LessonProgress(step=1)) is None


def test_an_unwritable_folder_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    store = ProgressStore(blocker / "sub")
    warning = store.save("x", LessonProgress())
    assert warning is not None and "could not save progress" in warning


def test_data_dir_honours_the_override(data_dir: Path) -> None:
    from tracer.tui import progress

    assert progress.data_dir() == data_dir


def test_shipped_lessons_are_keyed_by_name(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    lesson = shipped / "01_x.yaml"
    lesson.write_text("", encoding="utf-8")
    assert lesson_key(lesson, shipped) == "built-in:01_x"
    other = tmp_path / "mine.yaml"
    assert lesson_key(other, shipped) == str(other.resolve())


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary", "not text (UTF-8)"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"lessons": {"x": {"answers": []}}}', "'answers' must be an object"),
    ],
    ids=["binary", "deeply-nested", "list-for-object"],
)
def test_an_unreadable_file_is_set_aside_never_a_crash(
    data_dir: Path, content: bytes, problem: str
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "progress.json").write_bytes(content)
    store = ProgressStore()
    assert store.lessons == {}
    assert store.warning is not None and problem in store.warning
    assert (data_dir / "progress.json.corrupt").read_bytes() == content  # kept, not deleted
    assert not (data_dir / "progress.json").exists()


def test_two_instances_answering_quizzes_lose_nothing(data_dir: Path) -> None:
    first, second = ProgressStore(), ProgressStore()  # both read the same (empty) file
    mine = LessonProgress(step=2, answers={"a": QuizAnswer("1", True)})
    first.save("lesson", mine)
    theirs = LessonProgress(step=5, answers={"b": QuizAnswer("0.5", False)})
    second.save("lesson", theirs)  # its copy never saw answer "a"
    second.save("other", LessonProgress(step=1))
    saved = ProgressStore().get("lesson")
    assert saved is not None
    assert set(saved.answers) == {"a", "b"}
    assert saved.step == 5  # the last writer's position
    first.save("lesson", mine)  # and the first instance keeps "other" too
    again = ProgressStore()
    assert again.get("other") is not None
    assert set(again.get("lesson").answers) == {"a", "b"}  # type: ignore[union-attr]


def test_a_killed_writers_temporary_file_is_cleaned_up(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    stale = data_dir / "progress.json.999999999.tmp"  # no such process
    stale.write_text("{", encoding="utf-8")
    ProgressStore()
    assert not stale.exists()


def test_a_deeply_nested_settings_file_counts_as_none(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "settings.json").write_text("[" * 100_000, encoding="utf-8")
    assert load_settings() == {}
