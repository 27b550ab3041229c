"""Where each learner stopped in each lesson, and which quizzes they answered.

Stored as one JSON file in the user's data directory (XDG on Linux, via
platformdirs), or in ``$ATTN_DATA_DIR`` when set (tests point it at a
temporary folder). Writes are atomic (a temporary file, fsync, then a
rename) and merged: before writing, the file is read again and every lesson
and quiz answer another app instance saved meanwhile is kept, so two
instances never lose each other's answers. A file that cannot be read (not
UTF-8, not JSON, nested too deeply, the wrong shape) is moved aside to
``progress.json.corrupt`` (never deleted, never overwritten) and the learner
gets a warning, not a crash. Temporary files left by a killed writer are
removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from tracer.files import LockTimeout, locked, set_aside, write_atomic

DATA_ENV = "ATTN_DATA_DIR"
APP_NAME = "attention-tracer"
FILE_NAME = "progress.json"
VERSION = 1


def data_dir() -> Path:
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


@dataclass
class QuizAnswer:
    response: str
    right: bool


@dataclass
class LessonProgress:
    """One lesson's bookmark: a step (0-based), a sub-step inside a loop, and answers by quiz id."""

    step: int = 0
    sub: int = 0
    steps: int = 0
    """How many steps the lesson had when last saved (for "step 4 of 12" in the picker)."""
    seen: int = 0
    """How many of its steps the learner has reached (the furthest step, counted from 1)."""
    title: str = ""
    answers: dict[str, QuizAnswer] = field(default_factory=dict)
    finished: bool = False
    updated: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "sub": self.sub,
            "steps": self.steps,
            "seen": self.seen,
            "title": self.title,
            "finished": self.finished,
            "updated": self.updated,
            "answers": {
                key: {"response": a.response, "right": a.right} for key, a in self.answers.items()
            },
        }

    @classmethod
    def from_json(cls, data: object) -> LessonProgress:
        if not isinstance(data, dict):
            raise ValueError("a lesson's progress must be an object")
        answers_data = data.get("answers", {})
        if not isinstance(answers_data, dict):
            raise ValueError("'answers' must be an object")
        answers = {}
        for key, value in answers_data.items():
            if not isinstance(value, dict):
                raise ValueError(f"answer {key!r} must be an object")
            answers[str(key)] = QuizAnswer(str(value.get("response", "")), bool(value.get("right")))
        step = _int(data.get("step", 0))
        finished = bool(data.get("finished", False))
        steps = _int(data.get("steps", 0))
        # Files written before 'seen' was kept: the saved step was reached, and all of a
        # finished lesson.
        seen = data.get("seen")
        return cls(
            step=step,
            sub=_int(data.get("sub", 0)),
            steps=steps,
            seen=_int(seen) if seen is not None else (steps if finished else step + 1),
            title=str(data.get("title", "")),
            answers=answers,
            finished=finished,
            updated=float(data.get("updated", 0.0)),
        )


def progress_text(progress: LessonProgress | None) -> str:
    """A lesson's progress in words, as the picker (and the plain picker) show it."""
    if progress is None:
        return "not started"
    answered = len(progress.answers)
    right = sum(1 for a in progress.answers.values() if a.right)
    quizzes = f" · {right}/{answered} quiz answers right" if answered else ""
    if progress.finished:
        return "finished" + quizzes
    return f"step {progress.step + 1} of {progress.steps or '?'}{quizzes}"


def progress_summary(progress: LessonProgress | None) -> dict[str, int | bool]:
    """A lesson's progress in four numbers: steps ``seen``, quizzes ``answered`` and
    ``right``, and whether it is ``done`` (read to its end); ``attn lessons --json``."""
    if progress is None:
        return {"seen": 0, "answered": 0, "right": 0, "done": False}
    return {
        "seen": progress.seen,
        "answered": len(progress.answers),
        "right": sum(1 for answer in progress.answers.values() if answer.right),
        "done": progress.finished,
    }


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a whole number, got {value!r}")
    return value


class ProgressStore:
    """All lessons' progress, read once, written after every change."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else data_dir()
        self.path = self.folder / FILE_NAME
        self.warning: str | None = None
        """Set when the file was unreadable and has been moved aside."""
        self.lessons: dict[str, LessonProgress] = {}
        self._load()

    def _load(self) -> None:
        self._clean_temporaries()
        lessons = self._read()
        if lessons is not None:
            self.lessons = lessons

    def _read(self) -> dict[str, LessonProgress] | None:
        """The file's lessons; None (with a warning) when missing, unreadable or set aside."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.warning = (
                f"could not read {self.path}: {exc.strerror or exc}; progress starts afresh"
            )
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("lessons"), dict):
                raise ValueError("expected an object with 'lessons'")
            return {
                str(key): LessonProgress.from_json(value) for key, value in data["lessons"].items()
            }
        except RecursionError:
            problem = "nested too deeply"
        except UnicodeDecodeError:
            problem = "not text (UTF-8)"
        except (ValueError, TypeError, OverflowError) as exc:
            problem = str(exc)
        aside = self._set_aside()
        where = f"; it was moved to {aside}" if aside else ""
        self.warning = f"{self.path} is damaged ({problem}){where}; progress starts afresh"
        return None

    def _clean_temporaries(self) -> None:
        """Remove ``progress.json.PID.tmp`` files whose writer is gone (killed mid-write)."""
        with contextlib.suppress(OSError):
            for leftover in self.folder.glob(self.path.name + ".*.tmp"):
                pid = leftover.name[len(self.path.name) + 1 : -len(".tmp")]
                if pid.isdigit() and not _alive(int(pid)):
                    with contextlib.suppress(OSError):
                        leftover.unlink()

    def _set_aside(self) -> Path | None:
        """Move the unreadable file out of the way without overwriting an earlier one."""
        return set_aside(self.path)

    def get(self, key: str) -> LessonProgress | None:
        return self.lessons.get(key)

    def last(self) -> tuple[str, LessonProgress] | None:
        """The lesson touched most recently and not finished: what ``attn`` offers to resume."""
        open_lessons = [(k, p) for k, p in self.lessons.items() if not p.finished]
        if not open_lessons:
            return None
        return max(open_lessons, key=lambda item: item[1].updated)

    def save(self, key: str, progress: LessonProgress) -> str | None:
        """Record ``progress``; returns a warning instead of raising if the disk refuses.

        What is on disk now is merged in first: lessons this instance never
        touched, and answers to quizzes it has not answered, are kept as saved
        by another instance. This instance's own position and answers win.
        """
        progress.updated = time.time()
        self.lessons[key] = progress
        self.warning = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"could not save progress to {self.path}: {exc.strerror or exc}"
        # Read, merge and write under one lock: another instance's save in between is kept.
        try:
            with locked(self.path):
                return self._merge_and_write()
        except LockTimeout as exc:  # another instance that never lets go: not a hang
            return f"could not save progress to {self.path}: {exc.strerror}"

    def _merge_and_write(self) -> str | None:
        on_disk = self._read() or {}
        for other_key, other in on_disk.items():
            mine = self.lessons.get(other_key)
            if mine is None:
                self.lessons[other_key] = other
                continue
            for quiz, answer in other.answers.items():
                mine.answers.setdefault(quiz, answer)
            mine.finished = mine.finished or other.finished
            mine.seen = max(mine.seen, other.seen)
        data = {
            "version": VERSION,
            "lessons": {k: p.as_json() for k, p in self.lessons.items()},
        }
        try:
            write_atomic(self.path, json.dumps(data, indent=1))  # a symlink stays a symlink
        except OSError as exc:
            return f"could not save progress to {self.path}: {exc.strerror or exc}"
        return self.warning


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, but belongs to someone else
    return True


def lesson_key(path: Path, shipped: Path | None) -> str:
    """Shipped lessons by name (their folder moves between installs); others by absolute path."""
    try:
        if shipped is not None and path.resolve().parent == shipped.resolve():
            return f"built-in:{path.stem}"
    except OSError:
        pass
    return str(path.resolve())


SETTINGS_FILE = "settings.json"


def load_settings(folder: Path | None = None) -> dict[str, Any]:
    """Preferences kept between runs (the theme); an unreadable file counts as none."""
    path = (folder if folder is not None else data_dir()) / SETTINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def save_settings(settings: dict[str, Any], folder: Path | None = None) -> str | None:
    """Write the preferences atomically; a warning instead of an exception on failure."""
    folder = folder if folder is not None else data_dir()
    path = folder / SETTINGS_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(settings, indent=1), encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        return f"could not save settings to {path}: {exc.strerror or exc}"
    return None
