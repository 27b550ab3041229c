"""Hiding answers: what an unanswered quiz keeps off every screen of a lesson.

Decided here, once, over the whole screen (:func:`conceal`): while a number quiz
is not answered, no number within its tolerance of its answer is shown on any
step (a cell of any table, a table's title or formula, a caption, a question, a
hint), no cell is left that follows by one operation from what the screen shows (the
rest of a row or column whose total is known, its neighbours in a sequence, a shown cell
and a constant the lesson states, two shown cells' difference), no other screen (before the
quiz or after it) shows the row a computed-choice quiz's answer is read off, no other
screen draws a table that shows the cells a cells quiz asks for (all its cells read "?";
both found in :mod:`tracer.lessons.asked`), and so skipping a quiz and coming back gives
nothing away. Each table says why its cells are hidden (:func:`hidden_legend`). The step views (:mod:`tracer.lessons.views`), a loop's
sub-steps (:func:`substep_view`) and ``attn lesson check`` all ask here.

A sentence can give a quiz away without a number. Each quiz knows its answer as a statement
too (:func:`statement`), and a sentence that makes it is left out of every screen while the
quiz is unanswered (:func:`hide_statements`), the same sentence ``attn lesson check`` warns
about (:mod:`tracer.lessons.statements`):

- a choice quiz: its right choice, reworded when a sentence holds at least half of the
  right choice's own words (those no wrong choice and not the question has) and at least
  three of them, or repeats the question and names the right choice's words more than any
  wrong one's. A sentence that shares words with a wrong choice only states nothing;
- a number quiz whose answer is a whole number: a sentence that says the number (in
  digits, or as a word from "two" on) beside a word of what the question asks, in the same
  clause ("6 numbers in all" for "how many numbers does the cache keep", "the band of the
  last 3 keys" for "how many keys does 'step' see?"). Words beside the question's own
  numbers are its setting ("with 4 query heads ... how many numbers" asks about numbers),
  a number after a noun names rather than counts ("lesson 8", "key 3"), and "zero" is a
  fact wherever it is said about what the question asks ("each row of dS sums to zero").

Such a sentence reads "(said once the quiz at step 7 is answered)" (:func:`said_after`).
Words quoted in double quotes or backticks are tokens ("one"), not claims.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.asked import (
    Decider,
    Pattern,
    deciders,
    deciding_lines,
    every_cell,
    folded,
    patterns,
    tensor_key,
)
from tracer.lessons.derivations import close, derived_on_screen, shown_values
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
from tracer.lessons.unsaid import (
    PLAIN_LIMIT as PLAIN_LIMIT,
)
from tracer.lessons.unsaid import (
    Statement,
    hide_statements,
    unsaid,
)
from tracer.lessons.unsaid import (
    quiz_id as quiz_id,
)
from tracer.render.text import format_number
from tracer.tracing.stepper import LoopCanvas
from tracer.variant import Dot, SubStep

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner, Resolved


MAX_COPIES = 2
"""Copies of a quiz's answer a table may hold besides the answer's own cell (a symmetric
twin, the same value beside it): all are hidden (:func:`conceal`), but with more, the "?"
would say the answer themselves, which ``attn lesson check`` reports
(:mod:`tracer.lessons.giveaways`)."""

Cell = tuple[int, int]
"""A cell as drawn: (row, column) of the tensor folded to two dimensions (leading axes into rows)."""


HIDDEN_NOTE = "(? = a number that would give away a quiz's answer; shown once it is answered)"
"""Said under a table outside a quiz whose cells the walk hides (see :func:`conceal`)."""


@dataclass(frozen=True, order=True)
class Why:
    """Why some hidden cells of a table read "?": ``kind`` for the quiz at step ``step``
    (0-based; -1 when unknown).

    ``answer``: the answer's own cell. ``equal``: a number within the quiz's tolerance of its
    answer, whatever quantity it is (read off, it would be accepted). ``derives``: a number
    the answer follows from in one operation, with those shown (a step, a total, a difference,
    a stated factor). ``decides``: a row or column a choice quiz's answer is read off.
    ``cells``: every cell of a table whose pattern (its non-zero, zero or masked cells) is
    the set of cells a cells quiz asks for (:class:`~tracer.lessons.asked.Pattern`).
    """

    kind: str
    step: int = -1


_WHY_WORDS = {
    "answer": "the cell that holds {its} answer",
    "equal": "a number equal to {its} answer within its tolerance, read off it would be accepted",
    "derives": "a number {its} answer follows from in one operation",
    "decides": "the numbers {its} right choice is read off",
    "cells": "a table whose cells would show which cells {its} answer picks (where they are)",
}


def hidden_legend(tables: Iterable[Table]) -> str:
    """What the "?" of ``tables`` stands for, in words that are true of every hidden cell of
    them ("" when none is hidden): which quiz each waits for and why it is hidden.

    ``(? = hidden until the quiz at step 7 is answered: a number equal to its answer within
    its tolerance, read off it would be accepted)``. A table hidden without a reason
    recorded says :data:`HIDDEN_NOTE`.
    """
    tables = [table for table in tables if table.hidden]
    if not tables:
        return ""
    if any(not table.why for table in tables):
        return HIDDEN_NOTE
    why = sorted({reason for table in tables for reason in table.why})
    steps = sorted({reason.step for reason in why})
    if any(step < 0 for step in steps):
        waits, its = "a quiz is answered", "its"
    elif len(steps) == 1:
        waits, its = f"the quiz at step {steps[0] + 1} is answered", "its"
    else:
        named = ", ".join(str(step + 1) for step in steps[:-1]) + f" and {steps[-1] + 1}"
        waits, its = f"the quizzes at steps {named} are answered", "a quiz's"
    kinds = [kind for kind in _WHY_WORDS if any(reason.kind == kind for reason in why)]
    said = "; ".join(_WHY_WORDS[kind].format(its=its) for kind in kinds)
    return f"(? = hidden until {waits}: {said})"


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
    concealing: tuple[Secret, ...] = field(default=(), compare=False)
    """The answers of the quizzes not answered yet: a number in the stage's title or formula
    that states one reads "?" (:func:`conceal`)."""
    label: str = ""
    """A compare side's label as shown (the author's ``label:``, no answer in it)."""
    unsaid: tuple[Statement, ...] = field(default=(), compare=False)
    """The statements of the quizzes not answered yet: a sentence of the stage's title that
    makes one is left out (:func:`hide_statements`)."""
    why: tuple[Why, ...] = field(default=(), compare=False)
    """Why its hidden cells are hidden, and for which quiz (:func:`hidden_legend`)."""

    @property
    def name(self) -> str:
        """The tensor's name as computed: ``stage.tensor``, then any operations."""
        return self.resolved.name

    @property
    def derived(self) -> bool:
        """Whether the lesson computed this table from the run (``then:`` operations)."""
        return bool(self.resolved.ref.then)

    @property
    def title(self) -> str:
        """The table's title: the stage's, or for a derived table what it was derived from.

        A quiz's tables are titled by their names only (:attr:`name`): a stage's title may
        state the answer ("the cache holds 4 numbers").
        """
        resolved = self.resolved
        if self.derived:
            return f"Worked out by the lesson from {self.source}, after the run"
        kept = telling(self.concealing)
        return hide_statements(
            resolved.stage.title, self.unsaid, show=lambda text: conceal_text(text, kept)
        )

    @property
    def source(self) -> str:
        """The tensor a derived table was worked out from, as the learner reads its name."""
        ref = self.resolved.ref
        tensor = ref.tensor or next(iter(self.resolved.stage.tensors), ref.stage)
        return ref.stage if tensor == ref.stage else f"{ref.stage}.{tensor}"

    @property
    def formula(self) -> str:
        """The formula that made the table: the stage's, or the lesson's operations."""
        from tracer.lessons.lesson_runner import explain_steps  # here: the runner imports torch

        if self.derived:
            return ", then ".join(explain_steps(self.resolved))
        stage = self.resolved.stage
        name = self.resolved.ref.tensor or next(iter(stage.tensors), "")
        if name in stage.formulas or name in (stage.name, next(iter(stage.tensors), None)):
            return conceal_text(stage.formula_for(name) or "", telling(self.concealing))
        return ""  # the stage's formula makes another of its tensors (lesson 05's "zeroed")

    @property
    def legend(self) -> tuple[float, float] | None:
        """The range of the values the table shows (hidden cells left out); None if none."""
        return value_range(self.resolved.tensor, self.hidden)


@dataclass(frozen=True)
class QuizTables:
    """What a quiz step shows beside its question."""

    quiz: Quiz
    tables: tuple[Table, ...]
    context: int | None = None
    """The 0-based number of the show step whose table is borrowed (None: the quiz's own)."""
    own: bool = True
    """Whether every hidden cell holds this quiz's own answer (else some hold another
    unanswered quiz's, and a note must not say "the cell that shows the answer")."""

    @property
    def caption(self) -> str:
        if self.context is not None:
            return f"(the table from step {self.context + 1})"
        return ""

    @property
    def hidden(self) -> frozenset[Cell]:
        return frozenset(cell for table in self.tables for cell in table.hidden)


def value_range(
    tensor: torch.Tensor, hidden: frozenset[Cell] = frozenset()
) -> tuple[float, float] | None:
    """The smallest and largest finite value of ``tensor`` drawn, ``hidden`` cells left out."""
    values = tensor.detach().cpu().double().reshape(-1).tolist()
    columns = int(tensor.shape[-1]) if tensor.dim() else 1
    shown = [
        float(value)
        for flat, value in enumerate(values)
        if (flat // columns, flat % columns) not in hidden and math.isfinite(value)
    ]
    return (min(shown), max(shown)) if shown else None


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


def quiz_tables(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> QuizTables:
    """The tables quiz step ``number`` shows, with every cell hidden that gives an answer away.

    ``answered``: the ids (:func:`quiz_id`) of the quizzes answered so far; None reads the
    lesson top to bottom (the quizzes before this step are answered). See :func:`conceal`.
    """
    quiz = lesson.steps[number]
    assert isinstance(quiz, Quiz)
    tables: list[Table] = []
    context = None
    for ref in quiz.tables():  # the same tables `attn lesson check` computes
        if ref is quiz.cells:
            tables.append(Table(ref, runner.tensor(ref), "cells"))
        else:  # a stage's every tensor, as a show step shows them (none named, no 'then')
            tables.extend(Table(shown.ref, shown, "show") for shown in runner.tensors(ref))
    if not tables:
        context = quiz_context(lesson.steps, number)
        if context is not None:
            shown = lesson.steps[context]
            assert isinstance(shown, Show)
            resolved = runner.tensors(shown.ref)
            focus = runner.focus_of(shown.focus, resolved[0]) if shown.focus else None
            tables.append(Table(shown.ref, resolved[0], "context", focus))
            tables.extend(Table(other.ref, other, "context") for other in resolved[1:])
    kept = own_screen(secrets(lesson, runner, number, answered), number)
    deciding = deciders(lesson, runner, number, answered)
    cells = patterns(lesson, runner, number, answered)
    concealed = conceal(tables, kept, runner, deciding, working=True, patterns=cells)
    mine = conceal(
        tables, [secret for secret in kept if secret.number == number], runner, working=True
    )
    own = all(table.hidden <= alone.hidden for table, alone in zip(concealed, mine, strict=True))
    said = unsaid(lesson, runner, number, answered)
    return QuizTables(quiz, unsaying(concealed, said), context, own)


def hide_answer(quiz: Quiz, runner: LessonRunner, tables: list[Table]) -> tuple[Table, ...]:
    """Every table with the cells hidden that give away number quiz ``quiz``'s answer
    (its own quiz alone; :func:`conceal` hides every unanswered quiz's)."""
    answer = _number_answer(quiz, runner)
    if answer is None:
        return tuple(tables)
    alone = Secret(-1, quiz, answer, _allowed(quiz, answer), own_screen=True)
    return conceal(tables, (alone,), runner)


# What an unanswered quiz keeps off screen ---------------------------------------------


@dataclass(frozen=True)
class Secret:
    """The answer of a number quiz not answered yet: no number near it may be on screen."""

    number: int
    """The quiz's step (0-based; -1 when unknown)."""
    quiz: Quiz
    value: float
    tolerance: float
    """How far from ``value`` a number is still a right answer (absolute)."""
    own_screen: bool = False
    """Kept off its own quiz's screen, where no number within its tolerance may show, however
    plain (:attr:`plain`)."""

    def near(self, value: float) -> bool:
        """Whether ``value`` shown would be a right answer, or read as the answer."""
        if not math.isfinite(value):
            return False
        return abs(value - self.value) <= self.tolerance + 1e-9 or format_number(
            value
        ) == format_number(self.value)

    @property
    def plain(self) -> bool:
        """Whether the answer is a single-digit whole number (a count, an index, a weight of
        0 or 1): one that a screen shows for reasons of its own, so that a cell or a formula
        equal to it gives nothing away (:func:`conceal`)."""
        return self.single_digit and not self.own_screen

    @property
    def single_digit(self) -> bool:
        """Whether the answer is a whole number of one digit (within its tolerance)."""
        whole = round(self.value)
        return abs(whole) <= PLAIN_LIMIT and abs(self.value - whole) <= max(self.tolerance, 1e-6)


def telling(kept: Iterable[Secret]) -> tuple[Secret, ...]:
    """The answers of ``kept`` that any number equal to them gives away: those not
    :attr:`~Secret.plain`."""
    return tuple(secret for secret in kept if not secret.plain)


_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:[.,]\d+)?(?:e[-+]?\d+)?(?![\w]|[.,]\d)")
"""A number written in prose or a title: 742, 0.2935, -1.5, 1.2e-07."""


def _allowed(quiz: Quiz, answer: float) -> float:
    return quiz.tolerance * abs(answer) if quiz.relative else quiz.tolerance


def _number_answer(quiz: Quiz, runner: LessonRunner) -> float | None:
    if quiz.quiz_kind != "number":
        return None
    try:
        answer = runner.answer(quiz)
    except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
        return None  # `attn lesson check` reports it; the step says so when shown
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return None
    return float(answer)


def lesson_secrets(lesson: Lesson, runner: LessonRunner) -> tuple[Secret, ...]:
    """Every number quiz's answer in ``lesson`` (computed once per runner)."""

    def find() -> tuple[Secret, ...]:
        kept = []
        for number, step in enumerate(lesson.steps):
            if isinstance(step, Quiz):
                answer = _number_answer(step, runner)
                if answer is not None:
                    kept.append(Secret(number, step, answer, _allowed(step, answer)))
        return tuple(kept)

    return runner.once("secrets", find)


def secrets(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> tuple[Secret, ...]:
    """The answers step ``number`` must keep off screen: every number quiz's not answered.

    ``answered``: the ids of the quizzes answered (the session's); None reads the lesson
    top to bottom, as ``--plain`` and the exports print it, so only the quizzes from this
    step on are unanswered (the answers of those before are printed after them).
    """
    if answered is None:
        return tuple(kept for kept in lesson_secrets(lesson, runner) if kept.number >= number)
    return tuple(
        kept
        for kept in lesson_secrets(lesson, runner)
        if quiz_id(kept.number, kept.quiz) not in answered
    )


def own_screen(kept: Iterable[Secret], number: int) -> tuple[Secret, ...]:
    """``kept`` as quiz step ``number`` keeps them: its own answer off its screen wherever a
    number is within its tolerance, however plain."""
    return tuple(
        replace(secret, own_screen=True) if secret.number == number else secret for secret in kept
    )


def numbers_in(text: str) -> Iterable[tuple[re.Match[str], float]]:
    """Each number written in ``text``, with its value."""
    for match in _NUMBER.finditer(text):
        written = match.group().replace("−", "-").replace(",", ".")
        try:
            yield match, float(written)
        except ValueError:
            continue


def _decimal(written: str) -> bool:
    return any(mark in written for mark in ".,e")


_REFERENCE = re.compile(r"\b(?:[Ll]esson|[Ll]essons|[Cc]hapter|[Ss]ection)\s+$")
"""The words before a number that make it a reference to another part of the course."""


def conceal_text(text: str, kept: Iterable[Secret], *, whole: bool = True) -> str:
    """``text`` with each number that gives away an unanswered quiz's answer written "?"
    (``whole``: whole numbers too, not only those written with decimals)."""
    kept = tuple(kept)
    if not kept or not text:
        return text
    parts, last = [], 0
    for match, value in numbers_in(text):
        if not whole and not _decimal(match.group()):
            continue
        if _REFERENCE.search(text, 0, match.start()):
            continue  # "lesson 16" names a lesson: no quiz's answer, and "lesson ?" reads as nonsense
        if any(secret.near(value) for secret in kept):
            parts += [text[last : match.start()], "?"]
            last = match.end()
    return "".join(parts) + text[last:] if parts else text


def conceal(
    tables: Iterable[Table],
    kept: Iterable[Secret],
    runner: LessonRunner | None = None,
    deciding: Iterable[Decider] = (),
    *,
    working: bool = False,
    patterns: Iterable[Pattern] = (),
) -> tuple[Table, ...]:
    """``tables`` with what gives away an unanswered quiz's answer hidden: the one place that
    decides it, for every step of every front end.

    ``working``: the tables are a quiz's own, the numbers the author gives to work it out
    from ("by what angle is pair 1 of position 3 turned?" beside the speed of each pair), so
    a shown cell is not hidden there for being a stated factor or a difference away from an
    answer: that operation is what such a quiz asks for.

    - every cell whose number is within the quiz's tolerance of its answer (the answer's
      own cell, the twin of a symmetric table, the same value beside it: another quantity
      that happens to be as near is hidden too, since read off it would be accepted);
    - the answer's own cell when the table is the answer's tensor, whatever it reads;
    - one more cell of a row or column whose total is known where one cell of it is hidden
      (a softmax's row adds up to 1, a row of dS to 0, a total drawn beside it or shown in
      another table of the screen): it would be that total less the others; with two hidden,
      a subtraction gives only their sum;
    - the shown neighbours that give a hidden answer by one step of a sequence
      (:func:`~tracer.lessons.derivations.close`), a shown cell that a constant the lesson states (a scale
      1/√d, a count) multiplies or divides into the answer, and one of two shown cells
      whose difference is the answer (:func:`~tracer.lessons.derivations.derived_on_screen`);
    - each row or column that an unanswered computed-choice quiz's answer is read off
      (``deciding``, :func:`deciders`: "which key weighs most for journey?");
    - every cell of a table that gives away the cells an unanswered cells quiz asks for
      (``patterns``, :func:`patterns`): the answer's own tensor, or a table whose non-zero,
      zero or masked cells are that set (lesson 05's mask, a weights table zeroed there).
      All its cells read "?", not only those of the set: "?" at those places alone would
      draw the answer;
    - each number in the stage's title or formula that states such an answer, which reads
      "?" (:attr:`Table.title`, :attr:`Table.formula`).

    A *plain* answer (:attr:`Secret.plain`: a single-digit whole number, a count, an index,
    a weight of 0 or 1) is on many screens for reasons of its own (a block size, a mask's
    0s, "tile 0"), and hiding each would hide the lesson and the settings a quiz needs: it
    is hidden where it is the answer, its own cell wherever that table is drawn, and where
    a live value in prose works it out, never merely for being equal; but on its own
    quiz's screen (:func:`own_screen`) no number within its tolerance shows.

    Each table records why its cells are hidden (:attr:`Table.why`, said by
    :func:`hidden_legend`). Each front end draws the ``hidden`` cells as "?", and a table's
    range (:attr:`Table.legend`) leaves them out; once the quiz is answered the session asks
    again without it, and they show.
    """
    kept, deciding, tables = tuple(kept), tuple(deciding), tuple(tables)
    patterns = tuple(patterns)
    if not kept and not deciding and not patterns:
        return tuple(replace(table, concealing=kept) for table in tables)
    grids = [folded(table.resolved.tensor) for table in tables]
    shut: list[set[Cell]] = [set(table.hidden) for table in tables]
    why: list[set[Why]] = [{Why("answer")} if table.hidden else set() for table in tables]
    for at, table in enumerate(tables):
        grid = grids[at]
        shape = tuple(int(n) for n in table.resolved.tensor.shape)
        for secret in kept:
            ref = secret.quiz.answer
            if (
                runner is not None
                and isinstance(ref, TensorRef)
                and ref.cell is not None
                and tensor_key(ref, table.resolved)
                == tensor_key(table.resolved.ref, table.resolved)
            ):
                cell = grid_cell(shape, runner.cell_of(ref) or ())
                if cell is not None:
                    shut[at].add(cell)
                    why[at].add(Why("answer", secret.number))
        for secret in telling(kept):
            near = _near(grid, secret) - shut[at]
            if near:
                shut[at] |= near
                why[at].add(Why("equal", secret.number))
        for decider in deciding:
            lines = deciding_lines(grid, decider.row)
            if lines:
                shut[at] |= lines
                why[at].add(Why("decides", decider.step))
        for pattern in patterns:
            if pattern.named(table.resolved) or pattern.given_by(grid):
                shut[at] |= every_cell(grid)
                why[at].add(Why("cells", pattern.step))
    stated = stated_constants(runner, tables)
    while True:  # each rule may hide a cell another then reads from
        totals = shown_values(grids, shut)
        changed = False
        for at, grid in enumerate(grids):
            more = close(grid, shut[at], telling(kept), totals)
            if more:
                shut[at] |= more
                steps = {reason.step for reason in why[at]} or {-1}
                why[at] |= {Why("derives", step) for step in steps}
                changed = True
        screen = () if working else telling(kept)
        for at, cell, step in derived_on_screen(grids, shut, screen, stated):
            shut[at].add(cell)
            why[at].add(Why("derives", step))
            changed = True
        if not changed:
            break
    return tuple(
        replace(
            table,
            hidden=frozenset(shut[at]),
            concealing=kept,
            why=tuple(sorted(why[at])) if shut[at] else (),
        )
        for at, table in enumerate(tables)
    )


def _near(grid: torch.Tensor, secret: Secret) -> set[Cell]:
    """The cells of ``grid`` whose number would read as ``secret``'s answer."""
    if not grid.numel():
        return set()
    # Candidates by torch (a table may hold a million values), then exactly.
    close = (grid - secret.value).abs() <= secret.tolerance + 1e-4
    return {
        (row, column)
        for row, column in close.nonzero().tolist()
        if secret.near(float(grid[row, column]))
    }


def hidden_cells(
    tensor: torch.Tensor, kept: Iterable[Secret], hidden: Iterable[Cell] = ()
) -> frozenset[Cell]:
    """The cells of ``tensor`` (folded to two dimensions) that read "?" while the quizzes of
    ``kept`` are unanswered: ``hidden`` (cells already known to hold an answer), each cell
    within a quiz's tolerance of its answer (unless it is :attr:`~Secret.plain`), and those
    the answer follows from by one operation within the table (see :func:`conceal`, which
    also weighs the other tables of a screen). Non-finite values (a loop matrix's cells not
    written yet) are never an answer."""
    kept = tuple(kept)
    shut: set[Cell] = set(hidden)
    if not kept:
        return frozenset(shut)
    grid = folded(tensor)
    if not grid.numel():
        return frozenset(shut)
    for secret in telling(kept):
        shut |= _near(grid, secret)
    if shut:
        shut |= close(grid, shut, telling(kept), ())
    return frozenset(shut)


@dataclass(frozen=True)
class SubStepView:
    """One sub-step of a loop as a step shows it, with what an unanswered quiz keeps off it.

    The loop's matrix, the sub-step's tensors, its formula and its written-out arithmetic
    are all on screen at once, so the same rules as for a table apply to each
    (:func:`hidden_cells`), and the arithmetic is left out where any of its numbers is
    hidden: the rest of a sum would give the hidden one by an addition.
    """

    sub: SubStep
    hidden: Mapping[str, frozenset[Cell]]
    """Per tensor of the sub-step, the cells that read "?"."""
    canvas_hidden: frozenset[Cell] = frozenset()
    """The cells of the loop's matrix (as far as it is filled) that read "?"."""
    formula: str = ""
    """The sub-step's formula, any number in it that gives an answer away written "?"."""
    arithmetic: bool = True
    """Whether its declared equations may be written out with their numbers."""
    count_shown: bool = True
    """Whether the loop's length and the sub-step's ordinal may be said: False where the
    length is an unanswered quiz's answer ("pair 36 of 36" would say it)."""

    @property
    def concealed(self) -> bool:
        """Whether anything of the sub-step reads "?" or is left out."""
        return self.concealed_in_text or bool(self.canvas_hidden) or not self.arithmetic

    @property
    def concealed_in_text(self) -> bool:
        """Whether what a text front end prints of it (its formula, place and tensors, not
        the loop's matrix or the arithmetic) reads "?" anywhere."""
        return bool(
            any(self.hidden.values())
            or not self.count_shown
            or self.formula != (self.sub.formula or "")
        )


def substep_view(
    sub: SubStep,
    kept: Iterable[Secret],
    canvas: LoopCanvas | None = None,
    count: int | None = None,
    deciding: Iterable[Decider] = (),
) -> SubStepView:
    """What sub-step ``sub`` shows while the quizzes of ``kept`` are unanswered: the one place
    that decides it for a loop, as :func:`conceal` does for a step's tables.

    ``canvas``: the matrix the loop is filling (its cells written so far); ``count``: the
    loop's length, when known; ``deciding``: the rows of unanswered computed choices that the
    loop works out (:func:`loop_deciders`): a line of the matrix whose cells written so far
    are that row's reads "?", and so does each value of the sub-step that is one of them.
    """
    kept, deciding = tuple(kept), tuple(deciding)
    formula = sub.formula or ""
    if not kept and not deciding:
        return SubStepView(sub, {name: frozenset() for name in sub.tensors}, formula=formula)
    hidden = {name: hidden_cells(tensor, kept) for name, tensor in sub.tensors.items()}
    canvas_hidden: frozenset[Cell] = frozenset()
    if canvas is not None and canvas.rows * canvas.cols:
        import torch  # here: the walk is imported before torch is needed

        # A view of the canvas's own buffer (a loop over a long text fills a million cells).
        written = torch.frombuffer(canvas.values, dtype=torch.float64)
        grid = written.reshape(canvas.rows, canvas.cols)
        canvas_hidden = hidden_cells(grid, kept)
        canvas_hidden |= {
            cell for decider in deciding for cell in deciding_lines(grid, decider.row, partial=True)
        }
    if deciding:
        rows = [decider.row for decider in deciding]
        for name, tensor in sub.tensors.items():
            hidden[name] = hidden[name] | _among_rows(folded(tensor), rows)
    named = {
        name
        for equation in sub.equations
        for name in (
            (equation.a, equation.b, equation.result)
            if isinstance(equation, Dot)
            else (equation.before, equation.weight, equation.value, equation.after)
        )
    }
    arithmetic = not any(hidden.get(name) for name in named)
    count_shown = count is None or not any(secret.near(count) for secret in telling(kept))
    return SubStepView(
        sub,
        hidden,
        canvas_hidden,
        conceal_text(formula, telling(kept)),
        arithmetic,
        count_shown,
    )


def _among_rows(grid: torch.Tensor, rows: Sequence[torch.Tensor]) -> frozenset[Cell]:
    """The cells of ``grid`` whose value is one of a deciding row's (a score the loop just
    worked out, of the row a choice is read off)."""
    import torch

    if not grid.numel() or not rows:
        return frozenset()
    values = torch.cat([row.reshape(-1) for row in rows])
    close = torch.isclose(grid.unsqueeze(-1), values, rtol=1e-5, atol=1e-6).any(dim=-1)
    return frozenset((int(r), int(c)) for r, c in close.nonzero().tolist())


def stated_constants(runner: LessonRunner | None, tables: Sequence[Table] = ()) -> list[float]:
    """The constants a learner may multiply or divide a shown number by: each number the
    lesson writes (its summary and every step's words), in the titles and formulas of
    ``tables``, and the sizes of their axes (a head's width d), each with its square root (the
    scale 1/√d); 0 and 1 left out."""
    written: set[float] = set()
    if runner is not None:
        lesson = runner.lesson

        def find() -> tuple[float, ...]:
            texts = [lesson.summary]
            for step in lesson.steps:
                texts += _step_words(step)
            return tuple(value for text in texts for _match, value in numbers_in(text))

        written.update(runner.once("stated constants", find))
    for table in tables:
        stage = table.resolved.stage
        words = f"{stage.title} {stage.formula_for(table.resolved.ref.tensor or '') or ''}"
        written.update(value for _match, value in numbers_in(words))
        written.update(float(size) for size in table.resolved.tensor.shape)
    constants = set()
    for value in written:
        size = abs(value)
        if math.isfinite(size) and size not in (0.0, 1.0):
            constants |= {size, math.sqrt(size)}
    return sorted(constants)


def _step_words(step: object) -> list[str]:
    """The words a step writes: a narration's text, a caption, a quiz's question, choices and
    hints, a checkpoint's title and points."""
    if isinstance(step, Narration):
        return [step.text]
    if isinstance(step, (Show, Loop, Compare)):
        return [step.caption]
    if isinstance(step, Quiz):
        return [step.question, *step.choices, *step.hints]
    if isinstance(step, Checkpoint):
        return [step.title, *step.points]
    return []


def unsaying(tables: Iterable[Table], said: tuple[Statement, ...]) -> tuple[Table, ...]:
    """``tables`` with no sentence of their titles making a statement of ``said``."""
    return tuple(replace(table, unsaid=said) for table in tables)
