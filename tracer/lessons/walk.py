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

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from tracer.errors import TracerError
from tracer.lessons.model import (
    Checkpoint,
    Compare,
    Focus,
    Lesson,
    LessonStep,
    Loop,
    Narration,
    Quiz,
    Show,
    TensorRef,
)
from tracer.render.text import format_number
from tracer.tracing.stepper import Cancelled, Stepper
from tracer.variant import Stage, SubStep

if TYPE_CHECKING:
    import torch

    from tracer.lessons.runner import LessonRunner, Resolved

COUNT_STEPS = 2048
"""Loops up to this long are counted while loading ("pair 8 of 36"); longer ones say "of ?"."""
CHEAP_STEPS = 200
"""A loop's end is found without a worker only if it takes at most this many sub-steps."""

TABLE_WIDTH = 80
"""Text front ends (``--plain``, md, ipynb) print tables at most this wide: wider ones are
printed as blocks of columns (:func:`tracer.render.text.format_tensor`'s ``wrap``)."""

MAX_COPIES = 2
"""A quiz hides at most this many cells of a table besides the answer's own, for reading the
answer's number (a symmetric twin, a copy beside it); see :func:`hide_answer`."""

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
            source = resolved.ref.tensor or resolved.stage.name
            return f"{resolved.name} (derived from {resolved.ref.stage}.{source})"
        return resolved.stage.title

    @property
    def formula(self) -> str:
        """The formula that made the table: the stage's, or the lesson's operations."""
        from tracer.lessons.runner import describe  # here: the runner imports torch

        if self.derived:
            return "computed by the lesson after the run: " + " then ".join(
                describe(operation) for operation in self.resolved.ref.then
            )
        stage = self.resolved.stage
        name = self.resolved.ref.tensor or next(iter(stage.tensors), "")
        if name in stage.formulas or name in (stage.name, next(iter(stage.tensors), None)):
            return stage.formula_for(name) or ""
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


def quiz_tables(lesson: Lesson, runner: LessonRunner, number: int) -> QuizTables:
    """The tables quiz step ``number`` shows, each with the cells that give its answer away."""
    quiz = lesson.steps[number]
    assert isinstance(quiz, Quiz)
    tables: list[Table] = []
    context = None
    for ref in quiz.tables():  # the same tables `attn lesson check` computes
        tables.append(Table(ref, runner.tensor(ref), "cells" if ref is quiz.cells else "show"))
    if not tables:
        context = quiz_context(lesson.steps, number)
        if context is not None:
            shown = lesson.steps[context]
            assert isinstance(shown, Show)
            resolved = runner.tensors(shown.ref)
            tables.append(Table(shown.ref, resolved[0], "context", shown.focus))
            tables.extend(Table(other.ref, other, "context") for other in resolved[1:])
    return QuizTables(quiz, hide_answer(quiz, runner, tables), context)


def hide_answer(quiz: Quiz, runner: LessonRunner, tables: list[Table]) -> tuple[Table, ...]:
    """Every table with the cells hidden that show a number quiz's answer.

    The one place that decides what a quiz hides: each front end draws the
    ``hidden`` cells as "?", and a table's legend (:attr:`Table.legend`) leaves
    them out; the session shows them once the quiz is answered.

    The answer's own cell (when the table is the answer's tensor) and any cell
    on screen that reads the same number as it is drawn: a learner would read
    it off the symmetric twin, or off another table beside it. Only when such
    copies are few (:data:`MAX_COPIES` in a table): a number many cells read
    (the zeros of a dropout or a causal table) singles out no cell as the
    answer, and hiding every one would tell the learner that each ``?`` is the
    answer, so it would be read off a cell the learner knows is 0.
    """
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
        same = {
            (flat // columns, flat % columns)
            for flat, value in enumerate(tensor.double().reshape(-1).tolist())
            if format_number(float(value)) == drawn
        }
        if len(same - hidden) <= MAX_COPIES:
            hidden |= same
        hidden_tables.append(
            Table(table.ref, table.resolved, table.role, table.focus, frozenset(hidden))
        )
    return tuple(hidden_tables)


def _named(ref: TensorRef, resolved: Resolved) -> tuple[object, ...]:
    """Which tensor ``ref`` names, as computed (an unnamed tensor is the stage's first)."""
    first = next(iter(resolved.stage.tensors), None)
    return (ref.variant, ref.stage, ref.tensor or first, ref.then, ref.query, ref.options)


# One view per step -------------------------------------------------------------------


@dataclass(frozen=True)
class StepView:
    """What one step shows, for every front end: its prose and its tables.

    ``text`` is the step's prose as shown (live values filled in): a narration's
    text, a show, loop or compare step's caption, a quiz's question, a
    checkpoint's title and points. ``tables`` are the tensors it shows, in order
    (a loop's change from sub-step to sub-step: see :class:`LoopState`).
    """

    number: int
    step: LessonStep
    text: str
    tables: tuple[Table, ...] = ()
    quiz: QuizTables | None = None
    points: tuple[str, ...] = ()
    """A checkpoint's points, as shown (live values filled in)."""
    difference: torch.Tensor | None = None
    """A compare step's ``right - left`` (None: the shapes differ, or no compare step)."""

    @property
    def kind(self) -> str:
        return self.step.kind


StepT = TypeVar("StepT", Narration, Show, Loop, Compare, Quiz, Checkpoint)


def step_as(step: LessonStep, kind: type[StepT]) -> StepT:
    """``step`` as the class its kind names.

    A front end picks its drawer from a registry keyed by ``step.kind`` and asks
    here for the step's own type; the walk stays the one place that checks it.
    """
    if not isinstance(step, kind):
        raise TypeError(f"a {step.kind} step is not a {kind.__name__}")
    return step


def live(runner: LessonRunner, text: str, quiz: Quiz | None = None) -> str:
    """Prose as shown; a value that cannot be computed stays as the author wrote it."""
    if "{{" not in text:
        return text
    try:
        return runner.text(text, quiz)
    except TracerError:
        return text


def checkpoint_text(title: str, points: tuple[str, ...]) -> str:
    return title + "\n\n" + "\n".join(f"• {point}" for point in points)


def step_view(lesson: Lesson, runner: LessonRunner, number: int) -> StepView:
    """The view of step ``number``: the one place that decides what each kind of step shows."""
    step = lesson.steps[number]
    if isinstance(step, Narration):
        return StepView(number, step, live(runner, step.text))
    if isinstance(step, Checkpoint):
        points = tuple(live(runner, point) for point in step.points)
        return StepView(number, step, checkpoint_text(step.title, points), points=points)
    if isinstance(step, Show):
        resolved = runner.tensors(step.ref)
        first, *others = resolved
        tables = (
            Table(step.ref, first, "show", step.focus),
            *(Table(other.ref, other, "show") for other in others),
        )
        return StepView(number, step, live(runner, step.caption), tables)
    if isinstance(step, Compare):
        left, right, difference = runner.compare(step)
        tables = (Table(step.left, left, "left"), Table(step.right, right, "right"))
        return StepView(number, step, live(runner, step.caption), tables, difference=difference)
    if isinstance(step, Loop):
        return StepView(number, step, live(runner, step.caption))
    assert isinstance(step, Quiz)
    view = quiz_tables(lesson, runner, number)
    return StepView(number, step, live(runner, step.question, step), view.tables, view)


def loop_at(lesson: Lesson, number: int) -> Loop | None:
    """Step ``number`` if it is a loop (it then has sub-steps to walk)."""
    step = lesson.steps[number] if 0 <= number < len(lesson.steps) else None
    return step if isinstance(step, Loop) else None


def quiz_at(lesson: Lesson, number: int) -> Quiz | None:
    """Step ``number`` if it is a quiz (it then waits for an answer)."""
    step = lesson.steps[number] if 0 <= number < len(lesson.steps) else None
    return step if isinstance(step, Quiz) else None


# Quiz answers ---------------------------------------------------------------------


class Recorded(Protocol):
    """A saved answer to a quiz, as far as the walk reads it."""

    @property
    def right(self) -> bool: ...


@dataclass(frozen=True)
class Graded:
    """A learner's response to a quiz, checked: what to record and what to tell them."""

    quiz_id: str
    """The key the answer is saved under (:func:`quiz_id`)."""
    response: str
    right: bool
    answer: str
    """The right answer as the learner should see it."""


def quiz_id(number: int, quiz: Quiz) -> str:
    """The key a quiz's answer is saved under: its ``id:``, else its step number from 1."""
    return quiz.id or f"step-{number + 1}"


def grade(lesson: Lesson, runner: LessonRunner, number: int, response: str) -> Graded:
    """Check ``response`` to the quiz at step ``number`` against the answer computed live."""
    quiz = step_as(lesson.steps[number], Quiz)
    right = runner.is_right(quiz, response)
    return Graded(quiz_id(number, quiz), response, right, runner.answer_text(quiz))


def lesson_summary(
    lesson: Lesson,
    answers: Mapping[str, Recorded],
    key: Callable[[int, Quiz], str] = quiz_id,
) -> str:
    """The end-of-lesson text: the quiz score and the checkpoints' points."""
    quizzes = [(n, step) for n, step in enumerate(lesson.steps) if isinstance(step, Quiz)]
    lines = []
    if quizzes:
        given = [answers.get(key(n, quiz)) for n, quiz in quizzes]
        right = sum(1 for answer in given if answer is not None and answer.right)
        answered = sum(1 for answer in given if answer is not None)
        lines.append(f"Quizzes: {right} of {len(quizzes)} right ({answered} answered).")
        missed = [n + 1 for (n, _), answer in zip(quizzes, given, strict=True) if answer is None]
        if missed:
            lines.append("Not answered: step " + ", ".join(str(n) for n in missed) + ".")
    else:
        lines.append("This lesson has no quizzes.")
    covered = [
        point for step in lesson.steps if isinstance(step, Checkpoint) for point in step.points
    ]
    if covered:
        lines.append("")
        lines.append("What it covered:")
        lines.extend(f"• {point}" for point in covered)
    return "\n".join(lines)


def answer_shown(quiz: Quiz, runner: LessonRunner) -> str:
    """A quiz's right answer as every front end shows it once it may be shown.

    A choice with its letter (``b) journey``), several with theirs, cells as
    ``row,column``, a number with how close an answer had to be.
    """
    answer = runner.answer(quiz)
    text = runner.answer_text(quiz)
    if quiz.quiz_kind == "choice" and isinstance(answer, int):
        return f"{chr(ord('a') + answer)}) {text}"
    if quiz.quiz_kind == "multiple" and isinstance(answer, tuple):
        letters = ", ".join(f"{chr(ord('a') + i)})" for i in answer)
        return f"{letters} {text}"
    if quiz.quiz_kind == "number":
        if quiz.relative:
            return f"{text} (answers within {quiz.tolerance * 100:g}% of it count as right)"
        if quiz.tolerance:
            return f"{text} (answers within {quiz.tolerance:g} count as right)"
    return text


def step_heading(step: LessonStep) -> str:
    """What a step is, in a few words: the heading of a step in text front ends."""
    if isinstance(step, Show):
        ref = step.ref
        query = ""
        if ref.query is not None and ref.options.inputs is not None:
            query = f", query {ref.query} ({ref.options.inputs.tokens[ref.query]})"
        return f"{ref.variant}, stage {ref.stage}{query}"
    if isinstance(step, Loop):
        return f"the {step.stage} loop of {step.variant}, step by step"
    if isinstance(step, Checkpoint):
        return step.title
    return step.kind


# Step labels ----------------------------------------------------------------------

STEP_ICONS = {
    "narration": "¶",
    "show": "▦",
    "loop": "⟳",
    "compare": "⇄",
    "quiz": "?",
    "checkpoint": "✓",
}


def step_label(number: int, step: LessonStep) -> tuple[str, str]:
    """Timeline label and tooltip for a lesson step."""
    icon = STEP_ICONS.get(step.kind, "·")
    if isinstance(step, (Show, Loop)):
        stage = step.ref.stage if isinstance(step, Show) else step.stage
        return f"{number} {icon} {stage}", f"{step.kind}: {stage}"
    if isinstance(step, Compare):
        return f"{number} {icon}", f"compare: {step.left.stage} and {step.right.stage}"
    if isinstance(step, Quiz):
        return f"{number} {icon}", f"quiz: {step.question}"
    if isinstance(step, Checkpoint):
        return f"{number} {icon}", f"checkpoint: {step.title}"
    return f"{number} {icon}", "narration"


# Loops --------------------------------------------------------------------------------


@dataclass
class LoopState:
    """One loop step's stepper and where its sub-steps start in it."""

    stepper: Stepper
    first: int
    limit: int | None
    last: int | None = None
    """Global number of the loop's last sub-step shown, once known."""

    def count_known(self) -> int | None:
        return None if self.last is None else self.last - self.first + 1

    def clamp(self, sub: int) -> int:
        """``sub``, or the loop's last sub-step if ``sub`` lies past a known end."""
        limit = self.count_known()
        return max(limit - 1, 0) if limit is not None and sub >= limit else sub

    def last_sub(self) -> int:
        """The loop's last sub-step (counted from 0) if its end is known, else its first."""
        return self.last - self.first if self.last is not None else 0

    def may_go_on(self, sub: int) -> bool:
        """Whether a sub-step may follow ``sub`` (none does past a known end)."""
        return self.last is None or self.first + sub + 1 <= self.last

    def after(self, sub: int, stage: str) -> str:
        """What follows sub-step ``sub`` of the loop building ``stage``, once it is computed.

        ``"next"``: another sub-step of the loop. ``"failed"``: the variant raised inside
        the loop (``stepper.error``). ``"end"``: the loop is over, and its end is now known.
        """
        target = self.first + sub + 1
        try:
            item = self.stepper.get(target)
        except IndexError:
            item = None
        if isinstance(item, SubStep) and item.stage == stage:
            return "next"
        if self.stepper.error is not None:
            return "failed"
        self.last = target - 1
        return "end"

    def count_within(self, steps: int) -> int | None:
        """Run the loop to its end if that takes at most ``steps`` sub-steps (loading worker)."""
        if self.last is not None or self.limit is not None:
            return self.count_known()
        stepper = self.stepper
        bound = self.first + steps

        def too_long() -> bool:
            return stepper.produced > bound

        try:
            end = stepper.next_stage(self.first, cancelled=too_long)
        except Cancelled:
            return None
        if end is None and stepper.error is not None:
            return None  # the variant failed inside the loop: stepping there reports it
        self.last = (end if end is not None else (stepper.total or self.first + 1)) - 1
        return self.count_known()

    def find_end(self, *, cheap_only: bool) -> int | None:
        """The global number of the loop's last sub-step shown (runs the loop if needed)."""
        if self.last is not None:
            return self.last
        stepper = self.stepper
        if self.limit is not None:
            candidate = self.first + self.limit - 1
            if cheap_only and stepper.cost(candidate) > CHEAP_STEPS:
                return None
            try:
                item = stepper.get(candidate)
            except IndexError:
                item = None
            if isinstance(item, SubStep):
                self.last = candidate
                return candidate
        if cheap_only:
            return None
        end = stepper.next_stage(self.first)
        self.last = (end if end is not None else (stepper.total or self.first + 1)) - 1
        return self.last


def start_loop(runner: LessonRunner, step: Loop) -> LoopState | None:
    """A stepper for a loop step, run up to the loop's first sub-step; None if there is no loop."""
    stepper = Stepper(lambda: runner.start(step.variant, step.options, step.query))
    index = 0
    while True:
        try:
            item = stepper.get(index)
        except IndexError:
            if stepper.error is not None:
                raise stepper.error from None
            return None
        if isinstance(item, SubStep) and item.stage == step.stage:
            break
        if isinstance(item, Stage) and item.name == step.stage:
            return None  # the stage is not built by a loop
        index += 1
    state = LoopState(stepper, index, step.limit)
    if step.limit is not None:
        state.find_end(cheap_only=True)
    return state


def warm_up(
    lesson: Lesson, runner: LessonRunner, *, highlight: Callable[[str], object] | None = None
) -> dict[int, LoopState]:
    """Compute every step's tensors once (a loading worker), so stepping only draws.

    The runner caches its traces, so the main thread later finds them done. A
    step that fails here fails again when shown, where its error is displayed.
    ``highlight``: called once with each source file a show, loop or compare step shows (a
    viewer prepares it).
    """
    loops: dict[int, LoopState] = {}
    sources: list[str | None] = []
    for number, step in enumerate(lesson.steps):
        try:
            if isinstance(step, Loop):
                state = start_loop(runner, step)
                if state is not None:
                    loops[number] = state
                    state.count_within(COUNT_STEPS)  # "pair 8 of 36" needs the 36
                    # The stage the loop builds names the axes of the matrix it fills.
                    built = runner.trace(step.variant, step.options, step.query).stage(step.stage)
                    sources.append(built.source_file)
                    # Its sub-steps show the file they ran in, which may be a helper's.
                    first = state.stepper.get(state.first)
                    sources.append(getattr(first, "source_file", None))
            elif isinstance(step, Show):
                sources.append(runner.tensor(step.ref).stage.source_file)
            elif isinstance(step, Compare):
                left, right, _difference = runner.compare(step)
                sources += [left.stage.source_file, right.stage.source_file]
            elif isinstance(step, Quiz):
                runner.answer(step)
        except Exception:  # reported when the step is shown
            continue
    if highlight is not None:
        for source in dict.fromkeys(sources):  # each file once, in the lesson's order
            if source:
                try:
                    highlight(source)
                except Exception:  # the pane says what is wrong with the file when shown
                    continue
    return loops
