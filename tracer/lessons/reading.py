"""Reading lesson text safely: the YAML layer under the lesson grammar.

Size, encoding, control characters and nesting depth are checked before
parsing; :mod:`tracer.yamldoc` then composes the node tree (no tags, anchors
or duplicate keys), saying each syntax error in words ("a colon and a space inside
unquoted text read as a new key; put the text in quotes"), one problem per line. Every
problem is a :class:`~tracer.yamldoc.Problem`; a lesson with problems raises
:class:`LessonError`, carrying them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from tracer.errors import EXIT_PROBLEMS, TracerError, UsageError
from tracer.yamldoc import MAX_BYTES as MAX_BYTES
from tracer.yamldoc import DocumentError, Problem, compose, decode
from tracer.yamldoc import line_column as line_column

if TYPE_CHECKING:
    from tracer.lessons.model import Lesson


class LessonError(TracerError):
    """A lesson with problems; ``problems`` lists every one, in file order."""

    exit_status = EXIT_PROBLEMS

    def __init__(self, problems: list[Problem], partial: Lesson | None = None) -> None:
        first = problems[0] if problems else Problem(1, 1, "invalid lesson")
        super().__init__(first.message, first.location)
        self.problems = problems or [first]
        self.partial = partial
        """The steps that could be read, so 'check' can still run them (all problems at once)."""

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


def compose_file(path: Path) -> yaml.Node | None:
    where = str(path)
    try:
        if path.is_dir():
            raise UsageError(f"{path} is a folder; give a lesson file (.yaml)")
        size = path.stat().st_size
        if size > MAX_BYTES:
            problem = Problem(
                1, 1, f"lesson is too large ({size / 1e6:.1f} MB; the limit is 1 MB)", where
            )
            raise LessonError([problem])
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"lesson file not found: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read lesson file {path}: {exc.strerror}") from None
    try:
        return compose_text(decode(data, where), where)
    except DocumentError as exc:
        raise LessonError(tidy(exc.problems)) from None


def compose_text(text: str, path: str) -> yaml.Node | None:
    """The node tree of ``text`` (checked by :func:`tracer.yamldoc.compose`, which inputs
    files share), or DocumentError with every problem."""
    return compose(text, path)


def tidy(problems: list[Problem]) -> list[Problem]:
    """Problems one to a line; anchors and aliases folded into one line.

    A billion-laughs file would otherwise print a hundred lines, one per alias.
    """
    problems = one_line(problems)
    shared = [p for p in problems if "are not allowed; repeat the value" in p.message]
    if len(shared) <= 1:
        return problems
    first = shared[0]
    summary = Problem(
        first.line,
        first.column,
        f"{first.message} ({_more(len(shared) - 1)} in this file)",
        first.path,
    )
    return sorted([p for p in problems if p not in shared] + [summary])


def one_line(problems: list[Problem]) -> list[Problem]:
    """Problems sorted, without duplicates, each message on one line.

    Messages quote the author's text, which may hold newlines or tabs (a
    quoted key, a multi-line value); escaping them keeps one problem per line.
    """
    cleaned = {Problem(p.line, p.column, p.message.translate(_ESCAPES), p.path) for p in problems}
    return sorted(cleaned)


_ESCAPES = str.maketrans(
    {c: c.encode("unicode_escape").decode("ascii") for c in "\n\r\t\x0b\x0c\x85\u2028\u2029"}
)


def _more(count: int) -> str:
    return f"{count} more anchor or alias" if count == 1 else f"{count} more anchors or aliases"
