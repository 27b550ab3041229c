"""Prose with live values: narration, captions, questions, hints and explanations.

Prose is plain text, shown exactly as written (it is not Markdown), except for
live values: ``{{name}}`` is replaced by the value ``name`` that the lesson
declares under ``values:``, computed when the lesson runs, so the text always
agrees with the code. A format may follow a colon::

    {{dot}}          0.9544     (four decimals, like the tables; counts and indices as whole numbers)
    {{dot:.2f}}      0.95       (any Python format for a number)
    {{best:token}}   journey    (an index, e.g. from argmax, as its token: a source token
                                 when the argmax ran over the source, as in cross-attention)
    {{answer}}       a quiz's own answer, in its explanation

:func:`live_text` is the one function every viewer (the app, ``--plain``,
export) uses to turn prose into the text shown. :func:`typed_numbers` finds
numbers with three or more decimals written into prose, which
``attn lesson check`` reports because they go stale when the lesson changes.
This module never imports torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tracer.lessons.grading import Answer
    from tracer.lessons.model import Lesson, Quiz, TensorRef


class LiveValues(Protocol):
    """What filling in live values reads from a run of the lesson (the lesson runner);
    a protocol, so that prose needs no import of the runner, which imports prose."""

    @property
    def lesson(self) -> Lesson: ...
    @property
    def tokens(self) -> tuple[str, ...]: ...
    def value(self, ref: TensorRef) -> float: ...
    def answer(self, quiz: Quiz) -> Answer: ...
    def answer_text(self, quiz: Quiz) -> str: ...
    def index_tokens(self, ref: TensorRef) -> tuple[str, ...]: ...


PLACEHOLDER = re.compile(r"\{\{\s*([^{}:\s]*)\s*(?::([^{}]*))?\}\}")
"""``{{name}}`` or ``{{name:format}}``."""
VALUE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
ANSWER = "answer"
"""The name under which a quiz's explanation sees the quiz's own answer."""
TOKEN_FORMAT = "token"
INTEGRAL_OPERATIONS = ("argmax", "count", "size")
"""Operations whose result is a whole number, shown without decimals."""
_TYPED_NUMBER = re.compile(r"(?<![\w.,])[-−]?\d+\.\d{3,}(?!\w|\.\d)")


@dataclass(frozen=True)
class Placeholder:
    name: str
    format: str | None
    start: int
    """Offset of ``{{`` in the text."""
    end: int


def placeholders(text: str) -> Iterator[Placeholder]:
    for match in PLACEHOLDER.finditer(text):
        spec = match.group(2)
        yield Placeholder(
            match.group(1), spec.strip() if spec is not None else None, match.start(), match.end()
        )


FORMAT_WIDTH_LIMIT = 40
"""The widest a live value's format may ask for (``{{dot:>40}}``)."""
FORMAT_PRECISION_LIMIT = 16
"""The most decimals a live value's format may ask for (``{{dot:.16f}}``)."""
SHOWN_LIMIT = 40
"""Characters of one formatted live value; a longer one is shown as the tables show it."""
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(\d*)[,_]?(?:\.(\d+))?[a-zA-Z%]?", re.DOTALL)


def format_problem(spec: str | None) -> str | None:
    """Why a placeholder's format cannot be used, or None when it can."""
    if spec is None or spec == TOKEN_FORMAT:
        return None
    try:
        format(1.5, spec)
    except (ValueError, TypeError, OverflowError, MemoryError):
        return (
            f"'{spec}' is not a number format; use one like .2f, .1% or .0f, "
            f"or '{TOKEN_FORMAT}' for an index shown as its token"
        )
    parts = _SPEC.fullmatch(spec)
    width, precision = (parts.group(1), parts.group(2)) if parts else ("", "")
    if width and int(width) > FORMAT_WIDTH_LIMIT:
        return f"'{spec}' asks for a width of {int(width):,}; the most is {FORMAT_WIDTH_LIMIT}"
    if precision and int(precision) > FORMAT_PRECISION_LIMIT:
        return (
            f"'{spec}' asks for {int(precision):,} decimals; the most is {FORMAT_PRECISION_LIMIT}"
        )
    return None


def format_value(
    value: float, spec: str | None, tokens: tuple[str, ...], *, integral: bool = False
) -> str:
    """A live value as prose shows it; an index that is not a token stays a number."""
    from tracer.render.text import format_number

    if spec == TOKEN_FORMAT:
        index = int(value) if math.isfinite(value) and value == int(value) else -1
        return tokens[index] if 0 <= index < len(tokens) else format_number(value)
    if spec and format_problem(spec) is None:  # a spec the check refuses is never applied
        text = format(value, spec)
        if len(text) <= SHOWN_LIMIT:
            return text
        return format_number(value)  # 3.4e38 with .2f: 39 digits, shown as the tables do
    if spec:
        return format_number(value)
    if integral and math.isfinite(value) and value == int(value):
        return str(int(value))
    # A value that came out whole (a sum made with scale and add) reads as the quiz's answer
    # box and explanation read it: "6", not "6.0000".
    return format_number(value, whole=True)


def live_text(text: str, runner: LiveValues, *, quiz: Quiz | None = None) -> str:
    """``text`` with every ``{{name}}`` replaced by its live value: the text to show.

    ``quiz`` makes ``{{answer}}`` available (in its explanation). The loader
    has checked every name and format, so a placeholder that still cannot be
    filled is left exactly as written rather than guessed.
    """
    if "{{" not in text:
        return text
    parts: list[str] = []
    last = 0
    for placeholder in placeholders(text):
        parts.append(text[last : placeholder.start])
        last = placeholder.end
        shown = _fill(placeholder, runner, quiz)
        parts.append(shown if shown is not None else text[placeholder.start : placeholder.end])
    parts.append(text[last:])
    return "".join(parts)


def _fill(placeholder: Placeholder, runner: LiveValues, quiz: Quiz | None) -> str | None:
    if placeholder.name == ANSWER and quiz is not None:
        if placeholder.format is None:
            return runner.answer_text(quiz)
        answer = runner.answer(quiz)
        if isinstance(answer, (int, float)) and quiz.quiz_kind == "number":
            return format_value(float(answer), placeholder.format, runner.tokens)
        return runner.answer_text(quiz)
    named = runner.lesson.value(placeholder.name)
    if named is None:
        return None
    ref = named.ref
    value = runner.value(ref)
    integral = bool(ref.then) and ref.then[-1].name in INTEGRAL_OPERATIONS
    tokens = runner.index_tokens(ref)  # a source token for an argmax over a source axis
    return format_value(value, placeholder.format, tokens, integral=integral)


_QUOTED_CODE = re.compile(r"`[^`\n]*`")
"""Code quoted in backticks is quoted literally (e.g. a printed value in a notebook), not a claim."""


def typed_numbers(text: str) -> Iterator[tuple[int, str]]:
    """(offset, number) for each number with three or more decimals outside placeholders and
    outside code quoted in backticks."""
    masked = PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)
    masked = _QUOTED_CODE.sub(lambda m: " " * len(m.group()), masked)
    for match in _TYPED_NUMBER.finditer(masked):
        yield match.start(), match.group()


MARKUP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bold", re.compile(r"\*\*(?:[^*\n]|\n(?![ \t]*\n))+?\*\*")),
    ("heading", re.compile(r"^[ \t]*#{1,6}[ \t]+\S[^\n]*", re.MULTILINE)),
    ("link", re.compile(r"\[[^\]\n]+\]\([^)\n]*\)")),
    ("italics", re.compile(r"(?<![*\w])\*[^*\s][^*\n]*(?<!\s)\*(?![*\w])")),
)
"""Markdown that prose does not render: it would show as asterisks and hashes in the app and
``--plain``. Code in backticks is not flagged: quoting code that way reads well as plain text."""


def markup(text: str) -> Iterator[tuple[int, str, str]]:
    """(offset, what was written, what it is) for each piece of Markdown markup in ``text``."""
    masked = PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)
    masked = _QUOTED_CODE.sub(lambda m: " " * len(m.group()), masked)
    found = []
    for kind, pattern in MARKUP:
        for match in pattern.finditer(masked):
            written = match.group().strip()
            found.append((match.start() + match.group().index(written[0]), written, kind))
    yield from sorted(found)
