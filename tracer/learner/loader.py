"""Loading a learner's file and reporting its failures as their own errors.

When the learner's code fails (a syntax error, an exception at import time or
inside ``attention``), the traceback we show keeps only the frames from the
learner's file: the error is theirs, at their line, and none of the tool's
frames get in the way.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracer.errors import EXIT_USAGE, Location, UsageError

FUNCTION_NAME = "attention"


class LearnerFailure(Exception):
    """The learner's own code failed; ``text`` is their traceback, ready to print."""

    exit_status = EXIT_USAGE

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


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


def load_function(path: Path, name: str = FUNCTION_NAME, expected: str = "") -> Callable[..., Any]:
    """Run the learner's file as a fresh module and return its function ``name``.

    Raises UsageError for a file that cannot be read or defines no such function,
    and LearnerFailure when the file's own code fails.
    """
    filename = str(path)
    if not path.exists():
        raise UsageError(f"file not found: {filename}")
    if not path.is_file():
        raise UsageError(f"not a file: {filename}")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"not UTF-8 text (byte {exc.start})", Location(filename)) from exc
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror}", Location(filename)) from exc
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise LearnerFailure(learner_traceback(exc, filename)) from exc
    namespace: dict[str, Any] = {"__name__": f"learner_{path.stem}", "__file__": filename}
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)  # so the learner's file can import its own helpers
    try:
        exec(code, namespace)
    except Exception as exc:
        raise LearnerFailure(learner_traceback(exc, filename)) from exc
    except SystemExit as exc:
        raise LearnerFailure(f"the file called exit({exc.code!r}) while loading\n") from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    function = namespace.get(name)
    if not callable(function):
        hint = f"; write def {expected}" if expected else ""
        raise UsageError(f"defines no function '{name}'{hint}", Location(filename))
    return function  # type: ignore[no-any-return]
