"""Reading a learner's file and reporting its failures as their own errors.

When the learner's code fails (a syntax error, an exception at import time or
inside ``attention``), the traceback we show keeps only the frames from the
learner's file: the error is theirs, at their line, and none of the tool's
frames get in the way. The code itself runs only in the sandbox process
(:mod:`tracer.learner.sandbox.child`).
"""

from __future__ import annotations

import traceback
from pathlib import Path

from tracer.errors import EXIT_PROBLEMS, EXIT_USAGE, Location, UsageError


class LearnerFailure(Exception):
    """The learner's own code failed; ``text`` is their traceback, ready to print."""

    exit_status = EXIT_USAGE

    def __init__(self, text: str, output: str = "") -> None:
        super().__init__(text)
        self.text = text
        self.output = output
        """What the learner's code printed before it failed."""


class Unwritten(LearnerFailure):
    """The learner's file still raises the scaffold's ``NotImplementedError``: not a failure of
    their code, an exercise not written yet (``attn check`` exits 1, problems found)."""

    exit_status = EXIT_PROBLEMS


def learner_traceback(exc: BaseException, filename: str) -> str:
    """A traceback of only the frames in ``filename``, then the exception itself."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return "".join(traceback.format_exception_only(type(exc), exc))
    frames = [
        frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == filename
    ]
    parts = []
    if frames:
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_list(frames))
    parts.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(parts)


def read_source(path: Path) -> None:
    """Check that the learner's file can be read and compiled (nothing in it runs here).

    Raises UsageError for a file that cannot be read and LearnerFailure for a
    syntax error, so these are reported before a sandbox process starts.
    """
    filename = str(path)
    if not path.exists():
        raise UsageError(f"file not found: {filename}")
    if not path.is_file():
        raise UsageError(f"not a file: {filename}")
    try:
        source = path.read_text(encoding="utf-8-sig")  # a byte order mark is not code
    except UnicodeDecodeError as exc:
        raise UsageError(f"not UTF-8 text (byte {exc.start})", Location(filename)) from exc
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror}", Location(filename)) from exc
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise LearnerFailure(learner_traceback(exc, filename)) from exc
    except ValueError as exc:  # null bytes
        raise UsageError(f"cannot be compiled: {exc}", Location(filename)) from exc
