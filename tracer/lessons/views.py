"""What each step of a lesson shows, decided once for every front end and for ``attn lesson check``.

The app, ``--plain`` and the exports draw what these views give them and never
decide again what a step shows. No Textual here: a view is plain data built
from the lesson's runner::

    from tracer.lessons.views import step_view
    view = step_view(lesson, runner, number, answered)  # answered: the quiz ids answered
    for table in view.tables:
        table.resolved.tensor, table.hidden      # what to draw, which cells read "?"

A quiz shows its own tables (``show:``, then ``cells:``); a quiz with neither
keeps the table of the show step just before it on screen. What a view hides is
decided by :mod:`tracer.lessons.hiding`. The session says which quizzes are
answered; a text front end that reads the lesson top to bottom counts the
quizzes before a step as answered (their answers are printed after them).
``attn lesson check`` builds the same views, so what it checks is what a learner sees.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from tracer.errors import TracerError
from tracer.lessons.asked import deciders, loop_deciders, pattern_cells, patterns
from tracer.lessons.hiding import (
    Cell,
    QuizTables,
    Secret,
    SubStepView,
    Table,
    conceal,
    conceal_text,
    hidden_cells,
    own_screen,
    quiz_id,
    quiz_tables,
    secrets,
    substep_view,
    telling,
    unsaying,
)
from tracer.lessons.model import (
    Checkpoint,
    Compare,
    Lesson,
    LessonStep,
    Loop,
    Narration,
    Quiz,
    Show,
)
from tracer.lessons.prose import placeholders
from tracer.lessons.unsaid import Statement, hide_statements, unsaid
from tracer.render.text import format_size

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner


TABLE_WIDTH = 80
"""Text front ends (``--plain``, md, ipynb) print tables at most this wide: wider ones are
printed as blocks of columns (:func:`tracer.render.text.format_tensor`'s ``wrap``)."""


def loop_substeps(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> Iterator[SubStepView]:
    """Every sub-step loop step ``number`` shows, each as :func:`substep_view` decides, for a
    text front end that prints the loop whole (``answered``: as for :func:`step_view`)."""
    step = step_as(lesson.steps[number], Loop)
    kept = secrets(lesson, runner, number, answered)
    deciding = loop_deciders(lesson, runner, number, answered)
    subs = list(runner.substeps(step))
    for sub in subs:
        yield substep_view(sub, kept, count=len(subs), deciding=deciding)


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
    difference_hidden: frozenset[Cell] = frozenset()
    """The difference's cells that read "?": those where one side is hidden and the other
    shown (the difference would give it by a subtraction) and any near an answer."""
    largest: str = ""
    """A compare step's largest difference in size, as text ("?" while it gives an answer away)."""
    choices: tuple[str, ...] = ()
    """A quiz's choices, as shown."""
    hints: tuple[str, ...] = ()
    """A quiz's hints, as shown (a front end shows them one at a time, as asked for)."""

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


def live(
    runner: LessonRunner,
    text: str,
    quiz: Quiz | None = None,
    kept: Iterable[Secret] = (),
    said: Iterable[Statement] = (),
) -> str:
    """Prose as shown; a value that cannot be computed stays as the author wrote it.

    ``kept``: the answers of the quizzes not answered yet (:func:`secrets`); a live value
    near one reads "?", and so does a number written into the prose, but for a single
    digit the author wrote ("4 heads" is the lesson's setting, not a computed answer).
    ``said``: their statements (:func:`tracer.lessons.hiding.unsaid`); a sentence that makes
    one, as written or with its live values filled in, reads "(said once the quiz at step 7
    is answered)" (:func:`tracer.lessons.hiding.hide_statements`).
    """
    said = tuple(said)
    if said:
        return hide_statements(
            text,
            said,
            show=lambda part: live(runner, part, quiz, kept),
            filled=lambda part: runner.text(part, quiz),
        )
    kept = tuple(kept)

    def written(words: str) -> str:
        # An author's single digit is the lesson's setting ("4 heads", "counting from 0");
        # a larger whole number may be a result typed in ("5 numbers instead of 16").
        words = conceal_text(words, kept, whole=False)
        return conceal_text(words, [secret for secret in kept if not secret.single_digit])

    if "{{" not in text:
        return written(text)
    try:
        if not kept:
            return runner.text(text, quiz)
        parts, last = [], 0
        for placeholder in placeholders(text):
            parts.append(written(text[last : placeholder.start]))
            filled = runner.text(text[placeholder.start : placeholder.end], quiz)
            parts.append(conceal_text(filled, kept))
            last = placeholder.end
        parts.append(written(text[last:]))
        return "".join(parts)
    except TracerError:
        return text


def checkpoint_text(title: str, points: tuple[str, ...]) -> str:
    return title + "\n\n" + "\n".join(f"• {point}" for point in points)


def step_view(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> StepView:
    """The view of step ``number``: the one place that decides what each kind of step shows.

    ``answered``: the ids (:func:`quiz_id`) of the quizzes the learner has answered (the
    session's); None reads the lesson top to bottom, as ``--plain`` and the exports do (the
    quizzes before this step are answered). Nothing on the step gives away the answer of a
    quiz not answered (:func:`conceal`): its numbers in prose read "?", its cells are hidden.
    """
    kept = secrets(lesson, runner, number, answered)
    said = unsaid(lesson, runner, number, answered)
    step = lesson.steps[number]
    if isinstance(step, Narration):
        return StepView(number, step, live(runner, step.text, kept=kept, said=said))
    if isinstance(step, Checkpoint):
        points = tuple(live(runner, point, kept=kept, said=said) for point in step.points)
        title = live(runner, step.title, kept=kept, said=said)
        return StepView(number, step, checkpoint_text(title, points), points=points)
    if isinstance(step, Show):
        resolved = runner.tensors(step.ref)
        first, *others = resolved
        tables = (
            Table(
                step.ref, first, "show", runner.focus_of(step.focus, first) if step.focus else None
            ),
            *(Table(other.ref, other, "show") for other in others),
        )
        caption = live(runner, step.caption, kept=kept, said=said)
        deciding = deciders(lesson, runner, number, answered)
        cells = patterns(lesson, runner, number, answered)
        concealed = conceal(tables, kept, runner, deciding, patterns=cells)
        return StepView(number, step, caption, unsaying(concealed, said))
    if isinstance(step, Compare):
        left, right, difference = runner.compare(step)

        def label(text: str | None) -> str:
            return live(runner, text or "", kept=kept, said=said)

        tables = (
            Table(step.left, left, "left", label=label(step.left.label)),
            Table(step.right, right, "right", label=label(step.right.label)),
        )
        caption = live(runner, step.caption, kept=kept, said=said)
        deciding = deciders(lesson, runner, number, answered)
        cells = patterns(lesson, runner, number, answered)
        tables = unsaying(conceal(tables, kept, runner, deciding, patterns=cells), said)
        if difference is None:
            return StepView(number, step, caption, tables)
        # Where one side is hidden and the other shown, the difference gives the hidden one by
        # a subtraction; where both are hidden it says nothing of either.
        sides = tables[0].hidden ^ tables[1].hidden
        hidden = hidden_cells(difference, kept, sides) | pattern_cells(difference, cells)
        if any(why.kind == "cells" for table in tables for why in table.why):
            # A side hidden whole for a cells quiz: the difference would draw what it hides.
            hidden = pattern_cells(difference, cells, every=True)
        largest, at = 0.0, None
        if difference.numel():
            sizes = difference.detach().abs()
            largest = float(sizes.max())
            columns = int(sizes.shape[-1]) if sizes.dim() else 1
            flat = int(sizes.reshape(-1).argmax())
            at = (flat // columns, flat % columns)
        gives = at in hidden or any(secret.near(largest) for secret in telling(kept))
        return StepView(
            number,
            step,
            caption,
            tables,
            difference=difference,
            difference_hidden=hidden,
            largest="?" if gives else format_size(largest),
        )
    if isinstance(step, Loop):
        return StepView(number, step, live(runner, step.caption, kept=kept, said=said))
    assert isinstance(step, Quiz)
    kept = own_screen(kept, number)
    view = quiz_tables(lesson, runner, number, answered)
    # Its question and choices name what it asks; another quiz's statement is left out of its
    # question, and every one (its own too) out of its hints. A choice is no claim.
    not_own = tuple(one for one in said if one.number != number)
    return StepView(
        number,
        step,
        live(runner, step.question, step, kept, not_own),
        view.tables,
        view,
        choices=tuple(live(runner, choice, step, kept) for choice in step.choices),
        hints=tuple(live(runner, hint, step, kept, said) for hint in step.hints),
    )


def lesson_intro(
    lesson: Lesson, runner: LessonRunner, answered: Collection[str] | None = None
) -> str:
    """The lesson's summary as shown before its first step: no unanswered quiz's answer in
    it, in numbers or in words (``answered``: as for :func:`step_view`)."""
    kept = secrets(lesson, runner, 0, answered)
    return live(runner, lesson.summary, kept=kept, said=unsaid(lesson, runner, 0, answered))


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
