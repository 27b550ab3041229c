"""Number quizzes whose tolerance accepts another value of the answer's own table.

A learner who reads the wrong row or the wrong column of a table types that cell's number: a
quiz whose tolerance reaches it grades the misreading right ("what is L for 'journey'?" with
``tolerance: 0.005`` accepts 1.9239, the value of 'step', for 1.9230). ``attn lesson check``
warns at the ``tolerance:`` value, in one line, with the largest tolerance that keeps every
accepted response nearer the answer than the other value (half their distance)::

    from tracer.lessons.neighbour_values import neighbour_values
    warnings = neighbour_values(lesson, runner)   # [] when no other value is accepted

The other values are the cells that share all but one index with the answer's cell (its row
and its column, in a table of any rank), as the learner types them: to 4 decimals. A cell
equal to the answer (a symmetric table's transpose, equal columns) is the same number, and
right; a cell that is not a finite number (a masked ``-inf``) is no answer anyone types. A
tolerance that lets a naive guess through (:mod:`tracer.lessons.guesses`) is warned about once,
for the guess.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.guesses import accepted, tolerance_at
from tracer.lessons.hiding import lesson_secrets
from tracer.lessons.model import Lesson, TensorRef
from tracer.lessons.statements import source_lines
from tracer.render.labels import label_axes
from tracer.render.text import format_number
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner

SLACK = 1e-9
"""The hair of slack grading adds to every tolerance (:func:`tracer.lessons.grading.grade`)."""


@dataclasses.dataclass(frozen=True)
class Neighbour:
    """The other value of the answer's table nearest the answer, as a learner would type it."""

    value: float
    where: str
    """The cell, as its table labels it: ``[step]``, ``[starts, journey]``."""


def nearest_other(answer: float, table: list[tuple[tuple[str, ...], float]]) -> Neighbour | None:
    """The value of ``table`` (labelled cells) nearest ``answer``, not equal to it (None if none)."""
    best: Neighbour | None = None
    shown = format_number(answer)
    for labels, value in table:
        if not math.isfinite(value):
            continue
        typed = float(format_number(value))  # what a learner reading the table types
        if format_number(value) == shown or math.isclose(value, answer, abs_tol=1e-12):
            continue  # the same number: right wherever it is read
        if best is None or abs(typed - answer) < abs(best.value - answer):
            best = Neighbour(typed, f"[{', '.join(labels)}]")
    return best


def largest_tolerance(answer: float, other: float) -> float:
    """Half the distance from ``answer`` to ``other``, to one significant digit, rounded down:
    every response it accepts is nearer the answer than the other value."""
    half = abs(other - answer) / 2
    if half <= 0:
        return 0.0
    scale = 10 ** math.floor(math.log10(half))
    return float(math.floor(half / scale * (1 + 1e-9)) * scale)


def neighbour_values(lesson: Lesson, runner: LessonRunner) -> list[Problem]:
    """A warning at the ``tolerance:`` of each number quiz that accepts another value of its
    answer's row or column, in file order."""
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    source = source_lines(lesson)
    found = []
    for secret in lesson_secrets(lesson, runner):
        quiz = secret.quiz
        if not isinstance(quiz.answer, TensorRef) or secret.tolerance <= 0:
            continue
        if accepted(secret, len(lesson.inputs.tokens)):
            continue  # a guess (0, 1, 1/n) gets through: that tolerance is warned about already
        try:
            table = _lines_through(quiz.answer, runner)
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            continue  # `attn lesson check` reports a quiz that cannot be computed
        other = nearest_other(secret.value, table)
        if other is None or abs(other.value - secret.value) > secret.tolerance + SLACK:
            continue
        line, column = tolerance_at(source, quiz.line, quiz.column)
        found.append(
            Problem(
                line, column, _message(quiz.tolerance, quiz.relative, secret.value, other), path
            )
        )
    return sorted(found, key=lambda p: (p.line, p.column))


def _message(tolerance: float, relative: bool, answer: float, other: Neighbour) -> str:
    largest = largest_tolerance(answer, other.value)
    written = f"{tolerance * 100:g}%" if relative else f"{tolerance:g}"
    said = (
        f"warning: tolerance {written} accepts {format_number(other.value)}, the table's value "
        f"at {other.where}; the answer is {format_number(answer)}"
    )
    if largest < 0.00005:  # a 4-decimal answer could no longer pass: the two are too close
        return (
            f"{said}: the two differ by less than a 4-decimal answer's rounding; ask another cell"
        )
    suggested = f"{largest / abs(answer) * 100:.2g}%" if relative and answer else f"{largest:g}"
    return f"{said}: use at most {suggested}"


def _lines_through(ref: TensorRef, runner: LessonRunner) -> list[tuple[tuple[str, ...], float]]:
    """The other cells of the answer's table that share all but one index with its cell."""
    cell = runner.cell_of(ref)
    if not cell:
        return []
    resolved = runner.tensor(dataclasses.replace(ref, cell=None))
    tensor = resolved.tensor.detach().double()
    if tensor.dim() != len(cell) or tensor.is_complex():
        return []
    axes = label_axes(tuple(tensor.shape), resolved.axes, resolved.tokens, resolved.query)
    found = []
    for axis, size in enumerate(tensor.shape):
        for index in range(size):
            if index == cell[axis]:
                continue
            at = (*cell[:axis], index, *cell[axis + 1 :])
            labels = tuple(
                axes[k].labels[i] if i < len(axes[k].labels) else str(i) for k, i in enumerate(at)
            )
            found.append((labels, float(tensor[at].item())))
    return found
