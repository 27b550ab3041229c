"""Grading a learner's answer to a quiz: one pure function for the app, ``--plain`` and tests.

::

    from tracer.lessons.grading import grade
    result = grade(quiz, runner.answer(quiz), "0,3474", tokens)
    result.right        # True, False, or None: not an answer at all (nothing is revealed)
    result.message      # for None: what to type instead

Responses are text, as typed or as a widget reports them, and any text is safe here:
nothing a learner types makes grading raise.

- at most :data:`MAX_RESPONSE` characters (a longer response is no answer);
- digits are ASCII ``0``-``9`` only: a superscript ``²``, a circled ``①`` or another
  script's digit is no digit here (it is no answer, said in one line), never read as a
  number nor a crash;
- an index or a choice's number has at most :data:`MAX_INDEX_DIGITS` digits (beyond:
  out of range), a number at most :data:`MAX_NUMBER_CHARS` characters;
- what a message quotes of the response is cut to :data:`ECHO_CHARS` characters
  (:func:`echo`).

- number: ``0.95``, ``-1.2``, ``0,95`` (a decimal comma), ``1e-3``. Anything
  else is not an answer (``right is None``), so a slip of the finger never
  reveals the answer or uses up the one attempt.
- choice: the choice's text, its letter (``b``) or its number (``2``).
- multiple: every right choice, separated by commas or spaces (``a, c`` or ``1 3``).
- cells: the selected cells, separated by ``;`` or spaces; each cell is
  ``row,column`` (tokens or 0-based indices, ``journey,Your``), or one index
  for a single row.

Nothing here imports torch: answers come computed (``LessonRunner.answer``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tracer.lessons.model import Quiz
from tracer.render.labels import bare_token
from tracer.render.text import format_number

_NUMBER = re.compile(r"^[-+−]?([0-9]+([.,][0-9]*)?|[.,][0-9]+)([eE][-+]?[0-9]+)?$")
MAX_RESPONSE = 4096
"""The most characters a response may have (the plain front end reads no longer line)."""
MAX_NUMBER_CHARS = 64
"""The most characters of a typed number (more digits than a float holds)."""
MAX_INDEX_DIGITS = 9
"""The most digits of a typed index or choice number (more is out of range, never parsed)."""
ECHO_CHARS = 40
"""The most characters of the learner's own text a message quotes back (then "...")."""
ECHO_RESPONSE = 200
"""The most characters of a graded response a verdict repeats ("you answered ...")."""


def echo(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` as a message quotes it: one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ascii_index(text: str) -> int | None:
    """A whole number written in ASCII digits, at most :data:`MAX_INDEX_DIGITS` of them;
    None for anything else (``²``, ``①``, ``٣`` and 5,000 digits included)."""
    if not (text.isascii() and text.isdigit()):
        return None
    digits = text.lstrip("0") or "0"  # leading zeros say nothing
    return int(digits) if len(digits) <= MAX_INDEX_DIGITS else None


def _not_ascii(said: str, digit: str) -> str:
    """Why a response with ``digit`` (``²``, ``①``) is not read: in one line."""
    what = "is" if said == digit else f"holds '{digit}', which is"
    return f"'{said}' {what} not a digit 0-9; type digits 0-9 only"


def _foreign_digit(text: str) -> str | None:
    """The first character that is a digit of some kind but not ASCII 0-9 (``²``, ``①``)."""
    return next((c for c in text if not c.isascii() and c.isdigit()), None)


@dataclass(frozen=True)
class CellAnswer:
    """The right selection of a 'cells' quiz, and the shape of the tensor selected from."""

    cells: frozenset[tuple[int, ...]]
    shape: tuple[int, ...]
    labels: tuple[tuple[str, ...], ...] = ()
    """Per axis, the name of each position: a token on a token axis, else its index."""
    sequences: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """With a second sequence (cross-attention): each sequence's name and tokens, so that a
    token in both, at different positions, is never read as one of them silently."""

    def in_both(self, token: str) -> str:
        """Why ``token`` names no position by itself: it is in two sequences at different
        positions ("" when it is in one, or at the same position in both)."""
        found = [
            (name, [i for i, t in enumerate(tokens) if bare_token(t) == token or t == token])
            for name, tokens in self.sequences
        ]
        found = [(name, at) for name, at in found if at]
        if len(found) < 2 or len({tuple(at) for _, at in found}) == 1:
            return ""
        where = " and ".join(
            f"{'token' if len(at) == 1 else 'tokens'} {', '.join(map(str, at))} of the {name}"
            for name, at in found
        )
        return (
            f"'{echo(token)}' is in both sequences: {where} (counted from 0); type the "
            "0-based index of the one you mean"
        )

    def labelled_twice(self, token: str) -> bool:
        """Whether ``token`` labels a position on two axes or more of the table (the target's
        "cat" on its rows and the source's on its columns): typed alone, it could be either.
        A table that shows it on one axis only (a row picked from it, over the source's keys)
        is read as it labels it."""
        axes = [
            names
            for names in self.labels
            if token in names or token in (bare_token(name) for name in names)
        ]
        return len(axes) > 1

    def label(self, axis: int, index: int) -> str:
        names = self.labels[axis] if axis < len(self.labels) else ()
        return names[index] if index < len(names) else str(index)


Answer = float | int | tuple[int, ...] | CellAnswer
"""What ``LessonRunner.answer`` computes: a number, a choice index, the right choices'
indices, or the right cells."""


@dataclass(frozen=True)
class Grade:
    right: bool | None
    """None: the response is not an answer to this quiz; ask again, reveal nothing."""
    message: str = ""
    """Why a response is not an answer (for ``right is None``)."""


def parse_number(text: str) -> float | None:
    """A typed number; a decimal comma is accepted. None for anything else (or not finite,
    or longer than :data:`MAX_NUMBER_CHARS`)."""
    text = text.strip().replace("−", "-").replace(" ", "")
    if len(text) > MAX_NUMBER_CHARS or not _NUMBER.match(text):
        return None
    if "," in text:
        text = text.replace(",", ".")
    value = float(text)
    return value if math.isfinite(value) else None


def parse_choice(choices: Sequence[str], text: str) -> int | None:
    """A choice given as its text, letter (``a``) or number (``1``); None if it is none."""
    text = text.strip()
    if text in choices:
        return list(choices).index(text)
    if len(text) == 1 and text.isascii() and text.isalpha():
        index = ord(text.lower()) - ord("a")
        return index if 0 <= index < len(choices) else None
    number = ascii_index(text)
    if number is not None:
        index = number - 1
        return index if 0 <= index < len(choices) else None
    return None


def parse_choices(choices: Sequence[str], text: str) -> tuple[int, ...] | None:
    """Several choices (letters or numbers, separated by commas or spaces; or one text)."""
    single = parse_choice(choices, text)
    if single is not None and text.strip() in choices:
        return (single,)
    picked: set[int] = set()
    for part in re.split(r"[,;\s]+", text.strip()):
        if not part:
            continue
        index = parse_choice(choices, part)
        if index is None:
            return None
        picked.add(index)
    return tuple(sorted(picked)) if picked else None


def parse_cells(text: str, answer: CellAnswer) -> frozenset[tuple[int, ...]] | str:
    """Selected cells as index tuples, or why the text is not a selection."""
    cells: set[tuple[int, ...]] = set()
    shape = answer.shape
    rank = len(shape)
    for part in re.split(r"[;\s]+", text.strip()):
        if not part:
            continue
        pieces = [piece.strip() for piece in part.split(",")]
        if len(pieces) != rank:
            example = "journey,Your" if rank == 2 else "journey"
            return (
                f"'{echo(part)}' is not a cell; write each as {example} (tokens or 0-based indices)"
            )
        cell: list[int] = []
        for axis, piece in enumerate(pieces):
            names = answer.labels[axis] if axis < len(answer.labels) else ()
            bare = [bare_token(name) for name in names]  # "the" for "the@0": its first
            number = ascii_index(piece)
            both = answer.in_both(piece) if answer.labelled_twice(piece) else ""
            if both:
                return both
            if piece in names:
                index = names.index(piece)
            elif piece in bare:
                repeated = [names[i] for i, name in enumerate(bare) if name == piece]
                if len(repeated) > 1:  # 'the' is 'the@0' and 'the@4': never the first silently
                    return (
                        f"'{echo(piece)}' occurs more than once; type which, as the table "
                        f"labels it: {', '.join(repeated)}"
                    )
                index = bare.index(piece)
            elif number is not None:
                index = number
            elif piece.isascii() and piece.isdigit():  # more digits than any axis has
                index = shape[axis]
            elif _foreign_digit(piece) is not None:
                return _not_ascii(echo(piece), _foreign_digit(piece) or "")
            else:
                return f"'{echo(piece)}' is neither a token nor a 0-based index"
            if not 0 <= index < shape[axis]:
                return (
                    f"'{echo(piece)}' is out of range: there are {shape[axis]} "
                    f"(0 to {shape[axis] - 1})"
                )
            cell.append(index)
        cells.add(tuple(cell))
    return frozenset(cells)


def response_problem(quiz: Quiz, text: str) -> str | None:
    """Why ``text`` cannot be an answer to ``quiz`` (checked before anything is revealed)."""
    if not text.strip():
        return "type an answer first"
    if len(text) > MAX_RESPONSE:
        return f"an answer has at most {MAX_RESPONSE:,} characters; this one has {len(text):,}"
    said = echo(text)
    foreign = _foreign_digit(text)
    # A choice's own text may hold any character; a token is matched before digits are read.
    if foreign is not None and quiz.quiz_kind != "cells" and text.strip() not in quiz.choices:
        return _not_ascii(said, foreign)
    if quiz.quiz_kind == "number" and parse_number(text) is None:
        typed = text.strip().replace("−", "-").replace(" ", "")
        if len(typed) > MAX_NUMBER_CHARS and _NUMBER.match(typed):
            return f"a number has at most {MAX_NUMBER_CHARS} characters; '{said}' has more"
        if _NUMBER.match(typed):  # 1e999: beyond every number a quiz can ask
            return f"'{said}' is too large a number; a quiz's answers are below 1e308"
        return f"'{said}' is not a number; type digits, with a decimal point or comma"
    if quiz.quiz_kind == "choice" and parse_choice(quiz.choices, text) is None:
        return f"'{said}' is not one of the choices; type its letter or number"
    if quiz.quiz_kind == "multiple" and parse_choices(quiz.choices, text) is None:
        return f"'{said}' is not a list of choices; type their letters, like a, c"
    return None


def grade(quiz: Quiz, answer: Answer, response: str) -> Grade:
    """Whether ``response`` answers ``quiz`` rightly, given the computed ``answer``."""
    problem = response_problem(quiz, response)
    if problem is not None:
        return Grade(None, problem)
    if quiz.quiz_kind == "number":
        guess = parse_number(response)
        assert guess is not None and isinstance(answer, (int, float))
        allowed = quiz.tolerance * abs(float(answer)) if quiz.relative else quiz.tolerance
        # A hair of slack, so "0.95" is right for 0.9544 with tolerance 0.0044 despite rounding.
        return Grade(abs(guess - float(answer)) <= allowed + 1e-9)
    if quiz.quiz_kind == "choice":
        return Grade(parse_choice(quiz.choices, response) == answer)
    if quiz.quiz_kind == "multiple":
        picked = parse_choices(quiz.choices, response)
        right = tuple(sorted(answer)) if isinstance(answer, tuple) else ()
        return Grade(picked == right)
    assert isinstance(answer, CellAnswer)
    selected = parse_cells(response, answer)
    if isinstance(selected, str):
        return Grade(None, selected)
    return Grade(selected == answer.cells)


def answer_text(quiz: Quiz, answer: Answer) -> str:
    """The right answer as the learner should see it."""
    if quiz.quiz_kind == "choice" and isinstance(answer, int):
        return quiz.choices[answer] if 0 <= answer < len(quiz.choices) else str(answer)
    if quiz.quiz_kind == "multiple" and isinstance(answer, tuple):
        return ", ".join(quiz.choices[i] for i in answer if 0 <= i < len(quiz.choices))
    if isinstance(answer, CellAnswer):
        if not answer.cells:
            return "no cells"
        return "; ".join(
            ",".join(answer.label(axis, i) for axis, i in enumerate(cell))
            for cell in sorted(answer.cells)
        )
    assert isinstance(answer, (int, float))
    if isinstance(answer, int) and not isinstance(answer, bool):
        return str(answer)  # a count: "2", not "2.0000"
    # A float that came out whole (a sum of 0/1 flags, a count via `then: sum`) reads as one.
    return format_number(float(answer), whole=True)
