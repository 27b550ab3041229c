"""A computed-choice quiz whose deciding row is shown in full before it is asked, as
``attn lesson check`` refuses it.

A choice quiz whose answer is computed with ``argmax`` or ``argmin`` ("which key weighs most
for 'journey'?") is decided by one row of numbers. A table shown on an earlier step that
holds that row whole (as a row or a column) lets a learner read the answer off it before
answering, and the walk hides numbers, not a position: the quiz gives its answer away, so it
is a problem, at the table that shows the row::

    from tracer.lessons.deciding import deciding_rows
    problems = deciding_rows(lesson, runner, path)   # [] when no earlier table holds one
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Lesson, TensorRef
from tracer.lessons.views import quiz_at
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner

DECIDING = ("argmax", "argmin")
"""The last operations of a computed choice's answer that pick a position in a row."""


def deciding_rows(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A problem at each earlier step whose table holds a computed choice's deciding row."""
    found = []
    for number in range(len(lesson.steps)):
        quiz = quiz_at(lesson, number)
        ref = quiz.answer if quiz is not None else None
        if quiz is None or quiz.quiz_kind != "choice" or not isinstance(ref, TensorRef):
            continue
        if not ref.then or ref.then[-1].name not in DECIDING:
            continue
        try:
            row = runner.tensor(replace(ref, then=ref.then[:-1], cell=None)).tensor
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            continue  # check_lesson reports it
        if row.dim() != 1 or row.numel() < 2:
            continue
        for earlier in range(number):
            step = lesson.steps[earlier]
            for shown in step.tables():
                try:
                    table = runner.tensor(shown).tensor
                except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
                    continue
                if not _holds(table, row):
                    continue
                line, column = (shown.line, shown.column) if shown.line else (step.line, 1)
                found.append(
                    Problem(
                        line,
                        column,
                        f"this table holds, whole, the row the quiz at line "
                        f"{quiz.line} takes its answer from ({ref.then[-1].name}): a learner "
                        "reads the answer off it before answering; show it after the quiz, "
                        "or ask about something it does not show",
                        path,
                    )
                )
                break
    return found


def _holds(table: torch.Tensor, row: torch.Tensor) -> bool:
    """Whether a row or a column of ``table`` (folded to two dimensions) is ``row``."""
    import torch

    if table.dim() == 0 or not table.is_floating_point() or not row.is_floating_point():
        return False
    grid = table.detach().double().reshape(-1, table.shape[-1])
    wanted = row.detach().double()
    for lines in (grid, grid.T):
        if lines.shape[-1] != wanted.numel():
            continue
        close = torch.isclose(lines, wanted.expand_as(lines), rtol=1e-5, atol=1e-6).all(dim=-1)
        if bool(close.any()):
            return True
    return False
