"""Number quizzes whose tolerance lets a guess through, as ``attn lesson check`` refuses them.

A learner who has not worked anything out still types something: 0, 1, or an even split of
the weight over the tokens (1/n). A quiz whose tolerance accepts such a guess, when the answer
is not that number, grades a guess right ("a score quiz with ``tolerance: 10`` accepts 9, and
0 too"): it gives its answer away as surely as a question that states it, so it is a problem,
at the tolerance, where the teacher wrote it::

    from tracer.lessons.guesses import naive_guesses
    problems = naive_guesses(lesson, runner, path)   # [] when every tolerance is tight enough
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tracer.lessons.hiding import Secret, lesson_secrets
from tracer.lessons.model import Lesson
from tracer.lessons.statements import source_lines
from tracer.render.text import format_number
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner


def guesses(tokens: int) -> tuple[tuple[float, str], ...]:
    """(guess, what it is) for a lesson of ``tokens`` tokens."""
    found = [(0.0, "0"), (1.0, "1")]
    if tokens > 1:
        found.append((1 / tokens, f"an even split, 1/{tokens}"))
    return tuple(found)


def accepted(secret: Secret, tokens: int) -> str:
    """The first naive guess ``secret``'s quiz grades right though it is not the answer ("")."""
    for guess, what in guesses(tokens):
        if format_number(guess, whole=True) == format_number(secret.value, whole=True):
            continue  # the answer is the guess itself: knowing it is the point
        if math.isclose(guess, secret.value, rel_tol=1e-3, abs_tol=1e-4):
            continue
        if abs(guess - secret.value) <= secret.tolerance:
            return what
    return ""


def naive_guesses(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A problem at the tolerance of each number quiz that accepts a guess."""
    source = source_lines(lesson)
    tokens = len(lesson.inputs.tokens)
    found = []
    for secret in lesson_secrets(lesson, runner):
        what = accepted(secret, tokens)
        if not what:
            continue
        quiz = secret.quiz
        line, column = tolerance_at(source, quiz.line, quiz.column)
        distance = abs(secret.value - _value(what, tokens))
        found.append(
            Problem(
                line,
                column,
                f"this tolerance accepts a guess, {what}, though the answer is "
                f"{format_number(secret.value, whole=True)}; make it smaller than the answer's "
                f"distance to the guess ({format_number(distance, whole=True)}), for example "
                f"tolerance: {_tighter(distance)}",
                path,
            )
        )
    return found


def _value(what: str, tokens: int) -> float:
    return next(guess for guess, said in guesses(tokens) if said == what)


def _tighter(distance: float) -> str:
    """A tolerance to suggest: the largest round one under half the distance to the guess."""
    for tolerance in ("0.05", "0.01", "0.005", "0.001", "0.0001"):
        if float(tolerance) < distance / 2:
            return tolerance
    return f"{distance / 4:.8f}".rstrip("0")  # a guess this near: a tolerance nearer still


def tolerance_at(source: list[str], line: int, column: int) -> tuple[int, int]:
    """Where the value of the quiz's ``tolerance:`` is written: the first after its
    ``- quiz:`` line and before the next step (the quiz's own line if none is found)."""
    for index in range(max(line - 1, 0), len(source)):
        text = source[index]
        if index >= line and text.lstrip().startswith("- ") and _indent(text) < column:
            break  # the next step
        at = text.find("tolerance:")
        if at >= 0:
            after = at + len("tolerance:")
            value = len(text) - len(text[after:].lstrip(" "))
            return index + 1, (value if value < len(text.rstrip()) else at) + 1
    return line, column


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip()) + 1
