"""A computed-choice quiz whose deciding row is shown in full before it is asked, as
``attn lesson check`` warns about it.

A choice quiz whose answer is computed with ``argmax`` or ``argmin`` ("which key weighs most
for 'journey'?") is decided by one row of numbers. A table shown on an earlier step that
holds that row whole (as a row or a column), or a loop that fills it, would let a learner
read the answer off it before answering: the walk draws that row "?" there until the quiz
is answered (:func:`tracer.lessons.hiding.conceal`, :func:`~tracer.lessons.hiding.substep_view`),
and the warning says so.
The warning is at the table's step::

    from tracer.lessons.deciding import deciding_rows
    warnings = deciding_rows(lesson, runner, path)   # [] when no earlier table holds one
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.asked import DECIDING as DECIDING
from tracer.lessons.asked import deciding_row, loop_matrix
from tracer.lessons.model import Lesson, TensorRef
from tracer.lessons.views import quiz_at
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner


def deciding_rows(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each earlier step whose table holds a computed choice's deciding row."""
    found = []
    for number in range(len(lesson.steps)):
        quiz = quiz_at(lesson, number)
        ref = quiz.answer if quiz is not None else None
        if quiz is None or quiz.quiz_kind != "choice" or not isinstance(ref, TensorRef):
            continue
        row = deciding_row(quiz, runner)
        if row is None or not ref.then:
            continue
        for earlier in range(number):
            step = lesson.steps[earlier]
            built = loop_matrix(step)  # the matrix a loop fills, shown as it is filled
            for shown in (*step.tables(), *built):
                try:
                    table = runner.tensor(shown).tensor
                except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
                    continue
                if not _holds(table, row):
                    continue
                line, column = (shown.line, shown.column) if shown.line else (step.line, 1)
                if shown in built:
                    column = getattr(step, "column", 0) or 1
                what = ref.then[-1].name
                if shown in built:
                    message = (
                        f"warning: this loop works out, whole, the row the quiz at line "
                        f"{quiz.line} takes its answer from ({what}): its values read "
                        '"?" there until the quiz is answered; put the loop after the quiz, '
                        "or ask about something it does not work out"
                    )
                else:
                    message = (
                        f"warning: this table holds, whole, the row the quiz at line "
                        f"{quiz.line} takes its answer from ({what}): it reads "
                        '"?" there until the quiz is answered; show it after the quiz, or ask '
                        "about something it does not show"
                    )
                found.append(Problem(line, column, message, path))
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
