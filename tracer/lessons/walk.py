"""The lesson walk: what each step of a lesson shows, decided once for every front end.

The app, ``--plain`` and the exports draw what the walk gives them and never
decide again what a step shows. No Textual here: the walk is plain data built
from the lesson's runner::

    from tracer.lessons.walk import quiz_tables
    view = quiz_tables(lesson, runner, number)   # the quiz's tables, with the answer's cells hidden
    for table in view.tables:
        table.resolved.tensor, table.hidden      # what to draw, which cells read "?"

A quiz shows its own tables (``show:``, then ``cells:``); a quiz with neither
keeps the table of the show step just before it on screen. What it hides until
it is answered is decided here, once: the cell holding its answer and every
other cell on screen that reads the same number (the twin of a symmetric
table, or the same value in a table beside it), so the answer is never on
screen before it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.lessons.model import (
    Checkpoint,
    Compare,
    Focus,
    Lesson,
    Loop,
    Narration,
    Quiz,
    Show,
    TensorRef,
)

if TYPE_CHECKING:
    from tracer.lessons.runner import LessonRunner, Resolved

TABLE_WIDTH = 80
"""Text front ends (``--plain``, md, ipynb) print tables at most this wide: wider ones are
printed as blocks of columns (:func:`tracer.render.text.format_tensor`'s ``wrap``)."""

Cell = tuple[int, int]
"""A cell as drawn: (row, column) of the tensor folded to two dimensions (leading axes into rows)."""


@dataclass(frozen=True)
class Table:
    """One tensor a step shows: the resolved tensor, what to emphasise and what to hide."""

    ref: TensorRef
    resolved: Resolved
    role: str
    """``show`` (the quiz's ``show:``), ``cells`` (the cells to select) or ``context``
    (the table of the show step before the quiz)."""
    focus: Focus | None = None
    hidden: frozenset[Cell] = frozenset()
    """Cells that read "?" until the quiz is answered."""


@dataclass(frozen=True)
class QuizTables:
    """What a quiz step shows beside its question."""

    quiz: Quiz
    tables: tuple[Table, ...]
    context: int | None = None
    """The 0-based number of the show step whose table is borrowed (None: the quiz's own)."""

    @property
    def caption(self) -> str:
        if self.context is not None:
            return f"(the table from step {self.context + 1})"
        return ""

    @property
    def hidden(self) -> frozenset[Cell]:
        return frozenset(cell for table in self.tables for cell in table.hidden)


def grid_cell(shape: tuple[int, ...], index: tuple[int, ...]) -> Cell | None:
    """Where ``index`` of a tensor of ``shape`` is drawn, folded to (row, column)."""
    if len(index) != len(shape):
        return None
    if any(not 0 <= i < n for i, n in zip(index, shape, strict=True)):
        return None
    if not shape:
        return (0, 0)
    flat = 0
    for i, n in zip(index, shape, strict=True):
        flat = flat * n + i
    columns = shape[-1]
    return (flat // columns, flat % columns)


def quiz_context(steps: tuple[object, ...], number: int) -> int | None:
    """The show step a quiz without tables of its own is about: the one just before it."""
    for earlier in range(number - 1, -1, -1):
        candidate = steps[earlier]
        if isinstance(candidate, Show):
            return earlier
        if isinstance(candidate, (Narration, Checkpoint, Loop, Compare)):
            return None
    return None


def quiz_has_tables(lesson: Lesson, number: int) -> bool:
    """Whether quiz step ``number`` shows any table (cheap: nothing is computed)."""
    quiz = lesson.steps[number]
    assert isinstance(quiz, Quiz)
    return quiz.about is not None or quiz_context(lesson.steps, number) is not None


def quiz_tables(lesson: Lesson, runner: LessonRunner, number: int) -> QuizTables:
    """The tables quiz step ``number`` shows, each with the cells that give its answer away."""
    quiz = lesson.steps[number]
    assert isinstance(quiz, Quiz)
    tables: list[Table] = []
    context = None
    if quiz.shown is not None:
        tables.append(Table(quiz.shown, runner.tensor(quiz.shown), "show"))
    if quiz.cells is not None:
        tables.append(Table(quiz.cells, runner.tensor(quiz.cells), "cells"))
    if not tables:
        context = quiz_context(lesson.steps, number)
        if context is not None:
            shown = lesson.steps[context]
            assert isinstance(shown, Show)
            resolved = runner.tensors(shown.ref)
            tables.append(Table(shown.ref, resolved[0], "context", shown.focus))
            tables.extend(Table(other.ref, other, "context") for other in resolved[1:])
    return QuizTables(quiz, _hide_answer(quiz, runner, tables), context)


def _hide_answer(quiz: Quiz, runner: LessonRunner, tables: list[Table]) -> tuple[Table, ...]:
    """Every table with the cells hidden that show a number quiz's answer.

    The answer's own cell (when the table is the answer's tensor) and any cell
    on screen that reads the same number as it is drawn: a learner would read
    it off the symmetric twin, or off another table beside it.
    """
    from tracer.render.text import format_number

    if quiz.quiz_kind != "number":
        return tuple(tables)
    answer = runner.answer(quiz)
    if not isinstance(answer, (int, float)):
        return tuple(tables)
    drawn = format_number(float(answer))
    hidden_tables = []
    for table in tables:
        tensor = table.resolved.tensor.detach().cpu()
        shape = tuple(int(n) for n in tensor.shape)
        hidden: set[Cell] = set()
        ref = quiz.answer
        if (
            isinstance(ref, TensorRef)
            and ref.cell is not None
            and _named(ref, table.resolved) == _named(table.resolved.ref, table.resolved)
        ):
            cell = grid_cell(shape, ref.cell)
            if cell is not None:
                hidden.add(cell)
        columns = shape[-1] if shape else 1
        for flat, value in enumerate(tensor.double().reshape(-1).tolist()):
            if format_number(float(value)) == drawn:
                hidden.add((flat // columns, flat % columns))
        hidden_tables.append(
            Table(table.ref, table.resolved, table.role, table.focus, frozenset(hidden))
        )
    return tuple(hidden_tables)


def _named(ref: TensorRef, resolved: Resolved) -> tuple[object, ...]:
    """Which tensor ``ref`` names, as computed (an unnamed tensor is the stage's first)."""
    first = next(iter(resolved.stage.tensors), None)
    return (ref.variant, ref.stage, ref.tensor or first, ref.then, ref.query, ref.options)
