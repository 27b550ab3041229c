"""Where each learner stopped in each lesson, and which quizzes they answered.

Stored as one JSON file in the user's data directory (XDG on Linux, via
platformdirs), or in ``$ATTN_DATA_DIR`` when set (tests point it at a
temporary folder). Writes are atomic (a temporary file, then a rename). A
file that cannot be read is moved aside to ``progress.json.corrupt`` (never
deleted, never overwritten) and the learner gets a warning, not a crash.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_ENV = "ATTN_DATA_DIR"
APP_NAME = "attention-tracer"
FILE_NAME = "progress.json"
VERSION = 1


def data_dir() -> Path:
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override)
    import platformdirs

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
    title: str = ""
    answers: dict[str, QuizAnswer] = field(default_factory=dict)
    finished: bool = False
    updated: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "sub": self.sub,
            "steps": self.steps,
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
        return cls(
            step=_int(data.get("step", 0)),
            sub=_int(data.get("sub", 0)),
            steps=_int(data.get("steps", 0)),
            title=str(data.get("title", "")),
            answers=answers,
            finished=bool(data.get("finished", False)),
            updated=float(data.get("updated", 0.0)),
        )


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
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:
            self.warning = (
                f"could not read {self.path}: {exc.strerror or exc}; progress starts afresh"
            )
            return
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("lessons"), dict):
                raise ValueError("expected an object with 'lessons'")
            self.lessons = {
                str(key): LessonProgress.from_json(value) for key, value in data["lessons"].items()
            }
        except (ValueError, TypeError) as exc:
            self.lessons = {}
            aside = self._set_aside()
            where = f"; it was moved to {aside}" if aside else ""
            self.warning = f"{self.path} is damaged ({exc}){where}; progress starts afresh"

    def _set_aside(self) -> Path | None:
        """Move the unreadable file out of the way without overwriting an earlier one."""
        for attempt in range(100):
            suffix = ".corrupt" if attempt == 0 else f".corrupt.{attempt}"
            target = self.path.with_name(self.path.name + suffix)
            if not target.exists():
                try:
                    self.path.rename(target)
                except OSError:
                    return None
                return target
        return None

    def get(self, key: str) -> LessonProgress | None:
        return self.lessons.get(key)

    def last(self) -> tuple[str, LessonProgress] | None:
        """The lesson touched most recently and not finished: what ``attn`` offers to resume."""
        open_lessons = [(k, p) for k, p in self.lessons.items() if not p.finished]
        if not open_lessons:
            return None
        return max(open_lessons, key=lambda item: item[1].updated)

    def save(self, key: str, progress: LessonProgress) -> str | None:
        """Record ``progress``; returns a warning instead of raising if the disk refuses."""
        progress.updated = time.time()
        self.lessons[key] = progress
        data = {
            "version": VERSION,
            "lessons": {k: p.as_json() for k, p in self.lessons.items()},
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
            temporary.replace(self.path)
        except OSError as exc:
            return f"could not save progress to {self.path}: {exc.strerror or exc}"
        return None


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
    except (OSError, ValueError):
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
