"""Where each learner stopped in each lesson, and which quizzes they answered.

Stored in the user's data directory (XDG on Linux, via platformdirs), or in
``$ATTN_DATA_DIR`` when set (tests point it at a temporary folder):

* ``progress.json``: one JSON document, ``{"version": 1, "lessons": {KEY: RECORD}}``,
  written atomically (a temporary file, fsync, then a rename; a symlink is written
  through to its target, a symlink loop is refused).
* ``progress.json.journal``, only beside a big document (more than :data:`WHOLE_BELOW`
  bytes): one line of JSON per save, ``{"lesson": KEY, "progress": RECORD}``, appended.
  A save then costs one lesson's record, not the whole document; once the journal
  outgrows half the document (:func:`_compact_after`), the two are folded into a new
  document and the journal removed. A small document is rewritten whole at each save
  and has no journal, so an older attn reads all of it.

Saves are merged under a lock on the folder (:func:`tracer.files.locked`): what another
instance saved meanwhile is kept (its lessons, its quiz answers; the newer position of a
lesson wins), so two instances never lose each other's answers.

Nothing in the file is lost: fields and sections this version does not know (a later
version's) are kept as they were and written back, the version number is never lowered,
and a lesson's record this version cannot read is kept untouched (and not saved over). A
file that cannot be read at all (not UTF-8, not JSON, nested too deeply, the wrong shape)
is moved aside to ``progress.json.corrupt`` (never deleted, never overwritten). A file
that cannot be opened (no permission, a symlink loop) or is not a regular file (a FIFO, a
folder, a device: refused before it is opened) is left as it is, and progress is not
saved while this store lives; the learner is told once. Temporary files left by a killed
writer are removed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from tracer.files import (
    LockTimeout,
    NotRegularFile,
    check_regular,
    locked,
    read_regular,
    set_aside,
    target_of,
    write_atomic,
)

DATA_ENV = "ATTN_DATA_DIR"
APP_NAME = "attention-tracer"
FILE_NAME = "progress.json"
JOURNAL_SUFFIX = ".journal"
VERSION = 1
WHOLE_BELOW = 256 * 1024
"""A progress document (with its journal) up to this many bytes is rewritten whole at each
save; a bigger one gets a journal, appended to (see the module's docstring)."""
INDENTED_UP_TO = 1000
"""A document of up to this many lessons is written indented (one field a line)."""


def data_dir() -> Path:
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


@dataclass
class QuizAnswer:
    response: str
    right: bool
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Fields of the saved answer this version does not know (a later one's), kept as read."""

    def as_json(self) -> dict[str, Any]:
        return {**self.extra, "response": self.response, "right": self.right}


_LESSON_FIELDS = frozenset(
    {"step", "sub", "steps", "seen", "title", "finished", "updated", "answers"}
)


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
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Fields of the saved record this version does not know (a later one's), kept as read."""

    def as_json(self) -> dict[str, Any]:
        return {
            **self.extra,
            "step": self.step,
            "sub": self.sub,
            "steps": self.steps,
            "seen": self.seen,
            "title": self.title,
            "finished": self.finished,
            "updated": self.updated,
            "answers": {key: a.as_json() for key, a in self.answers.items()},
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
            answers[str(key)] = QuizAnswer(
                str(value.get("response", "")),
                bool(value.get("right")),
                {k: v for k, v in value.items() if k not in ("response", "right")},
            )
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
            extra={k: v for k, v in data.items() if k not in _LESSON_FIELDS},
        )


def merged(old: LessonProgress, new: LessonProgress) -> LessonProgress:
    """One lesson's progress saved twice (two instances, or a save and a later one), as one.

    The more recently updated record gives the position; quiz answers of both are kept
    (the more recent one's where both answered a quiz); finished if either finished; steps
    seen the most either saw; unknown fields of both kept. The order of the arguments
    matters only for equal times (``new`` wins), so replaying saves twice changes nothing.
    """
    if old.updated > new.updated:
        old, new = new, old
    return LessonProgress(
        step=new.step,
        sub=new.sub,
        steps=new.steps,
        seen=max(old.seen, new.seen),
        title=new.title,
        answers={**old.answers, **new.answers},
        finished=old.finished or new.finished,
        updated=new.updated,
        extra={**old.extra, **new.extra},
    )


def _adds_nothing(mine: LessonProgress, other: LessonProgress) -> bool:
    """Whether merging ``other`` into ``mine`` would change nothing (the common case when a
    whole document is read again: memory already holds it), checked without copying."""
    return (
        other.updated <= mine.updated
        and other.seen <= mine.seen
        and (mine.finished or not other.finished)
        and other.answers.keys() <= mine.answers.keys()
        and other.extra.keys() <= mine.extra.keys()
    )


def merge_into(mine: LessonProgress, other: LessonProgress) -> None:
    """:func:`merged`, in place: ``mine`` (the object a lesson being taken holds) takes it."""
    both = merged(other, mine)
    for name in LessonProgress.__dataclass_fields__:
        setattr(mine, name, getattr(both, name))


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


class _Unreadable(Exception):
    """The document's text cannot be read as progress: set it aside (the reason is the text)."""


@dataclass
class _Document:
    lessons: dict[str, LessonProgress]
    version: int = VERSION
    sections: dict[str, Any] = field(default_factory=dict)
    """Top-level sections other than ``version`` and ``lessons``, kept as read."""
    kept: dict[str, Any] = field(default_factory=dict)
    """Lessons' records a later version wrote in a form this one cannot read, kept as read."""


def _parse(raw: bytes) -> _Document:
    """The document in ``raw``; :class:`_Unreadable` when it cannot be read as progress.

    A document of a later version is read where it can be: a lesson record that does not
    parse is kept as it is rather than making the whole file unreadable.
    """
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("lessons"), dict):
            raise ValueError("expected an object with 'lessons'")
        version = data.get("version", VERSION)
        if isinstance(version, bool) or not isinstance(version, int):
            version = VERSION
        document = _Document(
            {},
            max(version, VERSION),
            {k: v for k, v in data.items() if k not in ("version", "lessons")},
        )
        for key, value in data["lessons"].items():
            try:
                document.lessons[str(key)] = LessonProgress.from_json(value)
            except (ValueError, TypeError, OverflowError):
                if version <= VERSION:
                    raise
                document.kept[str(key)] = value
        return document
    except RecursionError:
        raise _Unreadable("nested too deeply") from None
    except UnicodeDecodeError:
        raise _Unreadable("not text (UTF-8)") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise _Unreadable(str(exc)) from None


def _journal_lines(raw: bytes) -> tuple[list[tuple[str, LessonProgress]], int, int]:
    """The records of a journal's complete lines, how many bytes those lines take, and how
    many of them did not parse.

    A line that does not parse (a later version's, or one a full disk cut short) is
    skipped; an unfinished last line is not counted (its writer was killed mid-line).
    """
    records = []
    skipped = 0
    end = raw.rfind(b"\n") + 1
    for line in raw[:end].splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line.decode("utf-8"))
            if not isinstance(entry, dict) or not isinstance(entry.get("lesson"), str):
                raise ValueError("not a lesson's record")
            records.append((entry["lesson"], LessonProgress.from_json(entry.get("progress"))))
        except (ValueError, TypeError, OverflowError, RecursionError):
            skipped += 1
    return records, end, skipped


def _compact_after(document_size: int) -> int:
    """Journal bytes beyond which the journal is folded into the document."""
    return max(WHOLE_BELOW, document_size // 2)


class ProgressStore:
    """All lessons' progress, read once, saved a lesson at a time (see the module's docstring)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else data_dir()
        self.path = self.folder / FILE_NAME
        self.warning: str | None = None
        """Set when the file was unreadable (moved aside, or left where it is)."""
        self.lessons: dict[str, LessonProgress] = {}
        self._document = _Document({})
        """What the file holds besides the lessons read (kept and written back)."""
        self._refused: str | None = None
        """Why nothing is saved: a file that cannot be read must not be written over."""
        self._said: set[str] = set()
        self._seen_document: tuple[int, int, int] | None = None
        """The document as last read or written (inode, size, time): changed means reread."""
        self._seen_journal: tuple[int, int] | None = None
        """The journal as last read or written: (inode, bytes read)."""
        self._journal_skipped = 0
        """Lines of the journal that did not parse: the journal is set aside, not removed."""
        self._mutex = threading.Lock()  # a hang-up's save and the app's own take turns
        self._load()

    @property
    def journal(self) -> Path:
        """The journal: beside the document (beside its target, when it is a symlink)."""
        try:
            document = target_of(self.path)
        except OSError:  # a symlink loop: nothing is read or saved anyway
            document = self.path
        return document.with_name(document.name + JOURNAL_SUFFIX)

    # Reading --------------------------------------------------------------------------

    def _load(self) -> None:
        self._clean_temporaries()
        lessons = self._read()
        if lessons is not None:
            self.lessons = lessons
        if self._refused is None:
            self._catch_up(whole=True)

    def _read(self) -> dict[str, LessonProgress] | None:
        """The document's lessons; None (with a warning) when missing, unreadable or set aside."""
        try:
            raw = read_regular(self.path)
            identity = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):  # nothing there yet
            self._seen_document = None
            return None
        except OSError as exc:
            self._refuse(f"could not read {self.path}: {_why(exc)}")
            return None
        try:
            document = _parse(raw)
        except _Unreadable as problem:
            self._seen_document = None
            aside = self._set_aside()
            where = f"; it was moved to {aside}" if aside else ""
            self.warning = f"{self.path} is damaged ({problem}){where}; progress starts afresh"
            if aside is None:  # still there: never write over it
                self._refused = self.warning
                self._said.add(self.warning)
            return None
        self._document = document
        self._seen_document = (identity.st_ino, identity.st_size, identity.st_mtime_ns)
        return document.lessons

    def _refuse(self, reason: str) -> None:
        self.warning = f"{reason}; progress is not saved (the file is left as it is)"
        self._refused = self.warning
        self._said.add(self.warning)  # said now, by whoever shows the store's warning

    def _catch_up(self, *, whole: bool = False) -> int:
        """Merge into memory what the journal gained since last read (all of it if
        ``whole``); returns its size in bytes (0 when there is none)."""
        try:
            identity = os.stat(self.journal)
        except (FileNotFoundError, NotADirectoryError):  # nothing there yet
            self._seen_journal = None
            return 0
        except OSError as exc:
            self._refuse(f"could not read {self.journal}: {_why(exc)}")
            return 0
        seen = self._seen_journal
        offset = 0
        if not whole and seen is not None and seen[0] == identity.st_ino:
            offset = seen[1] if seen[1] <= identity.st_size else 0
        try:
            raw = read_regular(self.journal, offset)
        except (FileNotFoundError, NotADirectoryError):  # nothing there yet
            self._seen_journal = None
            return 0
        except OSError as exc:
            self._refuse(f"could not read {self.journal}: {_why(exc)}")
            return 0
        records, used, skipped = _journal_lines(raw)
        if offset == 0:
            self._journal_skipped = 0
        self._journal_skipped += skipped
        for key, record in records:
            self._take(key, record)
        self._seen_journal = (identity.st_ino, offset + used)
        return offset + len(raw)

    def _take(self, key: str, record: LessonProgress) -> None:
        mine = self.lessons.get(key)
        if mine is None:
            self.lessons[key] = record
        elif not _adds_nothing(mine, record):
            merge_into(mine, record)

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

    # Saving ---------------------------------------------------------------------------

    def save(self, key: str, progress: LessonProgress) -> str | None:
        """Record ``progress``; returns a warning instead of raising if the disk refuses.

        What is on disk now is merged in first: lessons this instance never
        touched, and answers to quizzes it has not answered, are kept as saved
        by another instance. This instance's own position and answers win. Each
        warning is returned once (the next save that fails the same way says nothing).
        """
        with self._mutex:
            progress.updated = time.time()
            self.lessons[key] = progress
            self.warning = None
            return self._once(self._save(key, progress))

    def _once(self, warning: str | None) -> str | None:
        if warning is None:
            self._said.clear()  # saved: a later failure is news again
            return None
        if warning in self._said:
            return None
        self._said.add(warning)
        return warning

    def _save(self, key: str, progress: LessonProgress) -> str | None:
        if self._refused is not None:
            return self._refused
        if key in self._document.kept:
            return (
                f"the progress of {key} in {self.path} was written by a later version of attn "
                "in a form this one cannot read; it is not saved over"
            )
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"could not save progress to {self.path}: {exc.strerror or exc}"
        # Read, merge and write under one lock: another instance's save in between is kept.
        try:
            with locked(self.path):
                return self._merge_and_write(key, progress)
        except LockTimeout as exc:  # another instance that never lets go: not a hang
            return f"could not save progress to {self.path}: {exc.strerror}"
        except OSError as exc:
            return f"could not save progress to {self.path}: {_why(exc)}"

    def _merge_and_write(self, key: str, progress: LessonProgress) -> str | None:
        try:
            document = os.stat(self.path)
            size = document.st_size
            identity: tuple[int, int, int] | None = (
                document.st_ino,
                document.st_size,
                document.st_mtime_ns,
            )
        except FileNotFoundError:
            size, identity = 0, None
        try:
            journal = os.stat(self.journal).st_size
        except FileNotFoundError:
            journal = 0
        if size + journal <= WHOLE_BELOW:
            return self._write_whole()
        if identity != self._seen_document:  # another instance rewrote it: read it again
            self._merge_document()
            if self._refused is not None:
                return self._refused
            journal = self._catch_up(whole=True)
        else:
            journal = self._catch_up()
        if self._refused is not None:
            return self._refused
        if journal > _compact_after(size):
            return self._write_whole()
        return self._append(key, self.lessons[key])

    def _merge_document(self) -> None:
        """Merge the document on disk into memory (another instance's saves are kept)."""
        on_disk = self._read() or {}
        for other_key, other in on_disk.items():
            self._take(other_key, other)

    def _write_whole(self) -> str | None:
        """Fold the document and its journal into one new document; remove the journal."""
        self._merge_document()
        if self._refused is not None:
            return self._refused
        self._catch_up(whole=True)
        if self._refused is not None:
            return self._refused
        lessons: dict[str, Any] = dict(self._document.kept)
        lessons.update((k, p.as_json()) for k, p in self.lessons.items())
        data = {
            **self._document.sections,
            "version": self._document.version,
            "lessons": lessons,
        }
        try:
            # A symlink stays a symlink; a FIFO or a folder in its place is not replaced.
            # Indented while a person might read it; compact (and written by json's C
            # encoder, ten times faster) once it is big.
            indent = 1 if len(lessons) <= INDENTED_UP_TO else None
            write_atomic(self.path, json.dumps(data, indent=indent), regular_only=True)
            written = os.stat(self.path)
            self._seen_document = (written.st_ino, written.st_size, written.st_mtime_ns)
        except OSError as exc:
            return f"could not save progress to {self.path}: {_why(exc)}"
        if self._seen_journal is not None:
            if self._journal_skipped:  # lines it could not read (a later version's): kept
                set_aside(self.journal)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.journal)  # all it held is in the document now
            self._seen_journal = None
            self._journal_skipped = 0
        return self.warning

    def _append(self, key: str, progress: LessonProgress) -> str | None:
        """One line for one lesson at the end of the journal, flushed to disk."""
        line = json.dumps({"lesson": key, "progress": progress.as_json()}) + "\n"
        data = line.encode("utf-8")
        try:
            check_regular(self.journal)
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
            fd = os.open(self.journal, flags, 0o644)
        except OSError as exc:
            return f"could not save progress to {self.journal}: {_why(exc)}"
        try:
            status = os.fstat(fd)
            end = status.st_size
            if end and os.pread(fd, 1, end - 1) != b"\n":
                data = b"\n" + data  # a line a killed writer left unfinished stays apart
            try:
                written = 0
                while written < len(data):
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)  # no half line left behind (a full disk)
                return f"could not save progress to {self.journal}: {_why(exc)}"
            seen = self._seen_journal
            if seen is not None and seen[0] == status.st_ino and seen[1] == end:
                self._seen_journal = (status.st_ino, end + len(data))
            elif seen is None and end == 0:
                self._seen_journal = (status.st_ino, len(data))
        finally:
            os.close(fd)
        return self.warning


def _why(exc: OSError) -> str:
    """An OSError in words: a not-regular file named by kind, a loop called a loop."""
    if isinstance(exc, NotRegularFile):
        return f"it is {exc.strerror}"
    if exc.errno == errno.ELOOP:
        return "a symlink loop (too many levels of symbolic links)"
    return str(exc.strerror or exc)


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
    """Preferences kept between runs (the theme); an unreadable file counts as none (a FIFO
    or a device in its place too, refused without waiting on it)."""
    path = (folder if folder is not None else data_dir()) / SETTINGS_FILE
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def save_settings(settings: dict[str, Any], folder: Path | None = None) -> str | None:
    """Write the preferences atomically (a symlink written through, a FIFO or a folder in
    its place left alone); a warning instead of an exception on failure."""
    folder = folder if folder is not None else data_dir()
    path = folder / SETTINGS_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(settings, indent=1), regular_only=True)
    except OSError as exc:
        return f"could not save settings to {path}: {_why(exc)}"
    return None
