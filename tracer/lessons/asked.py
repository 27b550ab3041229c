"""What a computed-choice quiz and a cells quiz ask about, which the walk keeps off other
screens while they are unanswered (:func:`tracer.lessons.hiding.conceal` draws on it).

- a computed choice ("which key weighs most for journey?", ``argmax``/``argmin``) is decided
  by one row: no other screen shows that row, whole or filled in by a loop;
- a cells quiz ("which cells will the causal mask hide?") asks for a set of cells: no other
  screen draws a table whose pattern shows them (the mask itself, weights zeroed there).

``attn lesson check`` (:mod:`tracer.lessons.deciding`) warns at an earlier table that holds a
computed choice's row.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Lesson, Loop, Quiz, TensorRef
from tracer.lessons.unsaid import quiz_id

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner, Resolved

Cell = tuple[int, int]


def folded(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` folded to two dimensions as drawn (leading axes into rows), as doubles."""
    tensor = tensor.detach().cpu()
    columns = int(tensor.shape[-1]) if tensor.dim() else 1
    return tensor.double().reshape(-1, columns) if tensor.numel() else tensor.double()


# Computed choices ---------------------------------------------------------------------

DECIDING = ("argmax", "argmin")
"""The last operations of a computed choice's answer that pick a position in a row."""


@dataclass(frozen=True)
class Decider:
    """The row a computed-choice quiz (step ``step``) takes its answer from with ``argmax`` or
    ``argmin``: while the quiz is unanswered, no other screen shows it (:func:`conceal`)."""

    step: int
    quiz: Quiz
    row: torch.Tensor = field(compare=False)


def deciding_row(quiz: Quiz, runner: LessonRunner) -> torch.Tensor | None:
    """The row (one dimension, two values or more) choice quiz ``quiz``'s answer is read off
    by its last ``argmax`` or ``argmin``; None if it has none or it cannot be computed."""
    ref = quiz.answer
    if quiz.quiz_kind != "choice" or not isinstance(ref, TensorRef):
        return None
    if not ref.then or ref.then[-1].name not in DECIDING:
        return None
    try:
        row = runner.tensor(replace(ref, then=ref.then[:-1], cell=None)).tensor
    except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
        return None  # `attn lesson check` reports it
    if row.dim() != 1 or row.numel() < 2 or not row.is_floating_point():
        return None
    return row.detach().cpu().double()


def deciders(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> tuple[Decider, ...]:
    """The deciding rows step ``number`` keeps off screen: those of the computed-choice
    quizzes not answered (``answered`` as for :func:`secrets`), on the screens before the
    quiz and after it alike (a learner who skips it and comes back), its own quiz's left
    out (a quiz's own tables are what it is worked out from). With ``answered`` None (the
    lesson read top to bottom) those of the quizzes after ``number``: the answers of those
    before are printed after them."""

    def find() -> tuple[Decider, ...]:
        kept = []
        for at, step in enumerate(lesson.steps):
            if isinstance(step, Quiz):
                row = deciding_row(step, runner)
                if row is not None:
                    kept.append(Decider(at, step, row))
        return tuple(kept)

    found = runner.once("deciders", find)
    if answered is None:
        return tuple(one for one in found if one.step > number)
    return tuple(
        one for one in found if one.step != number and quiz_id(one.step, one.quiz) not in answered
    )


def loop_matrix(step: object) -> tuple[TensorRef, ...]:
    """The tensor a loop step fills as it is stepped through (one), shown cell by cell; ()
    for any other step."""
    if not isinstance(step, Loop):
        return ()
    return (TensorRef(step.variant, step.stage, query=step.query, options=step.options),)


def loop_deciders(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> tuple[Decider, ...]:
    """The deciding rows (:func:`deciders`) that loop step ``number`` works out: those the
    tensor its stage builds holds as a row or a column."""
    step = lesson.steps[number]
    kept = deciders(lesson, runner, number, answered)
    if not isinstance(step, Loop) or not kept:
        return ()
    try:
        grid = folded(runner.tensor(loop_matrix(step)[0]).tensor)
    except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
        return ()
    return tuple(decider for decider in kept if deciding_lines(grid, decider.row))


def deciding_lines(grid: torch.Tensor, row: torch.Tensor, *, partial: bool = False) -> set[Cell]:
    """The cells of each row and each column of ``grid`` that is ``row`` (``partial``: a loop's
    matrix, whose cells not written yet are NaN: a line whose written cells, two at least,
    are ``row``'s at the same places)."""
    import torch

    if not grid.numel() or grid.dim() != 2:
        return set()
    found: set[Cell] = set()
    for lines, across in ((grid, True), (grid.T, False)):
        if lines.shape[1] != row.numel():
            continue
        wanted = row.expand_as(lines)
        same = torch.isclose(lines, wanted, rtol=1e-5, atol=1e-6)
        if partial:
            written = torch.isfinite(lines)
            matching = ((same | ~written).all(dim=1)) & (written.sum(dim=1) >= 2)
        else:
            matching = same.all(dim=1)
        for (line,) in matching.nonzero().tolist():
            width = int(lines.shape[1])
            found |= {(line, c) if across else (c, line) for c in range(width)}
    return found


def tensor_key(ref: TensorRef, resolved: Resolved) -> tuple[object, ...]:
    """Which tensor ``ref`` names, as computed (an unnamed tensor is the stage's first)."""
    first = next(iter(resolved.stage.tensors), None)
    return (ref.variant, ref.stage, ref.tensor or first, ref.then, ref.query, ref.options)


# Cells quizzes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    """The cells a cells quiz (step ``step``) asks for ("which cells will the causal mask
    hide?"): while it is unanswered, no other screen draws a table that shows them
    (:func:`conceal`): the answer's own tensor (lesson 05's mask), or one whose non-zero,
    zero or masked (non-finite) cells are those, transposed or repeated over leading axes
    (a weights table zeroed there, scores set to -inf there)."""

    step: int
    quiz: Quiz
    ref: TensorRef = field(compare=False)
    answer: torch.Tensor = field(compare=False)
    """The answer folded to two dimensions as drawn, True at each cell the quiz asks for."""

    def named(self, resolved: Resolved) -> bool:
        """Whether ``resolved`` is the answer's own tensor."""
        return tensor_key(self.ref, resolved) == tensor_key(resolved.ref, resolved)

    def given_by(self, grid: torch.Tensor) -> bool:
        """Whether a table drawn as ``grid`` (two dimensions, doubles) shows the answer's
        cells by its pattern. An answer of no cell or of every cell is no pattern: every
        table of its shape would match it."""
        import torch

        answer = self.answer
        picked = int(answer.sum())
        if grid.dim() != 2 or not grid.numel() or picked in (0, answer.numel()):
            return False
        finite = torch.isfinite(grid)
        marks = (grid != 0, (grid == 0) & finite, ~finite, finite)
        for wanted in (answer, answer.T):
            rows, columns = wanted.shape
            if grid.shape[1] != columns or grid.shape[0] % rows:
                continue
            blocks = wanted.repeat(grid.shape[0] // rows, 1)
            if any(bool(torch.equal(mark, blocks)) for mark in marks):
                return True
        return False


def lesson_patterns(lesson: Lesson, runner: LessonRunner) -> tuple[Pattern, ...]:
    """Every cells quiz's answer in ``lesson`` (computed once per runner); a quiz whose
    answer cannot be computed is left out (``attn lesson check`` reports it)."""

    def find() -> tuple[Pattern, ...]:
        kept = []
        for number, step in enumerate(lesson.steps):
            ref = step.answer if isinstance(step, Quiz) else None
            if not isinstance(step, Quiz) or step.quiz_kind != "cells":
                continue
            if not isinstance(ref, TensorRef):
                continue
            try:
                tensor = runner.tensor(ref).tensor
            except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
                continue
            if tensor.dim() not in (1, 2):
                continue
            kept.append(Pattern(number, step, ref, folded(tensor) != 0))
        return tuple(kept)

    return runner.once("patterns", find)


def patterns(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> tuple[Pattern, ...]:
    """The cells quizzes' answers step ``number`` keeps off screen: those not answered
    (``answered`` as for :func:`secrets`; None: the quizzes after ``number``), on the
    screens before the quiz and after it alike, its own quiz's left out (its own tables
    are what it asks to select from)."""
    found = (one for one in lesson_patterns(lesson, runner) if one.step != number)
    if answered is None:
        return tuple(one for one in found if one.step > number)
    return tuple(one for one in found if quiz_id(one.step, one.quiz) not in answered)


def pattern_cells(
    tensor: torch.Tensor, kept: Iterable[Pattern], *, every: bool = False
) -> frozenset[Cell]:
    """Every cell of ``tensor`` (folded to two dimensions) if it shows the cells a quiz of
    ``kept`` asks for by its pattern (:meth:`Pattern.given_by`), else none (``every``: every
    cell whatever it shows)."""
    kept = tuple(kept)
    if not kept and not every:
        return frozenset()
    grid = folded(tensor)
    if every or any(pattern.given_by(grid) for pattern in kept):
        return frozenset(every_cell(grid))
    return frozenset()


def every_cell(grid: torch.Tensor) -> set[Cell]:
    """Every cell of ``grid`` as drawn."""
    if grid.dim() != 2:
        return {(0, 0)} if grid.numel() else set()
    rows, columns = int(grid.shape[0]), int(grid.shape[1])
    return {(row, column) for row in range(rows) for column in range(columns)}
