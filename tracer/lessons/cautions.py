"""Warnings ``attn lesson check`` gives from running a lesson: what a learner would see that the
author may not mean, though the lesson loads and runs as it is.

- A live value in prose that reads "?" where it is shown: read top to bottom, its value is (near)
  the answer of a quiz not answered yet, so the walk hides it ("and by ? with a base of 100").
- A table named by its stage alone, with ``then``, where the stage has several tensors: the
  operations apply to the first tensor, the only one shown, so the warning names it.
- A sentence that states a quiz's answer in words before it is answered (a summary, narration
  that rewords the right choice): :mod:`tracer.lessons.statements`.
- A computed-choice quiz whose deciding row an earlier table holds whole:
  :mod:`tracer.lessons.deciding`.
- A sentence that puts a table's masked cells on the wrong side of its diagonal, or a
  caption that gives a shape the table does not have: :mod:`tracer.lessons.caption_claims`.
- A sentence whose relation ("each row sums to 1", "the same weights", "keeps pair 0", "all
  36 scores") its step's tables contradict, and a loop table titled "so far" that holds
  something else: :mod:`tracer.lessons.relation_claims`.
- A two-decimal number typed into prose that no table, live value or shown formula holds:
  :mod:`tracer.lessons.typed_values`.

Both are computed on the lesson's own runner, after :func:`tracer.lessons.check.check_lesson`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.caption_claims import diagonal_sides, shape_claims
from tracer.lessons.deciding import deciding_rows
from tracer.lessons.hiding import Secret, numbers_in, own_screen, secrets
from tracer.lessons.model import Lesson
from tracer.lessons.prose import ANSWER, placeholders
from tracer.lessons.relation_claims import relation_warnings
from tracer.lessons.statements import source_lines, stated_answers
from tracer.lessons.typed_values import unshown_numbers
from tracer.lessons.views import live, step_view
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner


def cautions(lesson: Lesson, runner: LessonRunner) -> list[Problem]:
    """Every warning of this module for ``lesson``, in file order."""
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    found = [
        *hidden_live_values(lesson, runner, path),
        *first_tensor_only(lesson, runner, path),
        *stated_answers(lesson, runner, path),
        *deciding_rows(lesson, runner, path),
        *diagonal_sides(lesson, runner, path),
        *shape_claims(lesson, runner, path),
        *relation_warnings(lesson, runner, path),
        *unshown_numbers(lesson, runner, path),
    ]
    return sorted(found, key=lambda p: (p.line, p.column))


def hidden_live_values(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each live value whose prose reads it as "?" when the lesson is read top to
    bottom (``--plain``, the exports, a learner answering in order): its value gives away a later
    quiz's answer, so the walk hides it. A quiz's own answer in its own question is refused by
    the giveaway check instead."""
    source = source_lines(lesson)
    found: list[Problem] = []
    for number, step in enumerate(lesson.steps):
        kept = secrets(lesson, runner, number)
        later = [secret for secret in kept if secret.number != number]
        if not later:
            continue
        # What the walk shows of the step, as it shows it (a quiz's explanation comes only
        # once it is answered, and is never concealed: it is not among these).
        view = step_view(lesson, runner, number)
        shown = "\n".join([view.text, *view.points, *view.choices, *view.hints])
        seen: dict[str, int] = {}
        for text in step.prose():
            if not text.strip() or live(runner, text, None, own_screen(kept, number)) not in shown:
                continue
            for placeholder in placeholders(text):
                raw = text[placeholder.start : placeholder.end]
                nth = seen.get(raw, 0)
                seen[raw] = nth + 1
                if placeholder.name == ANSWER:
                    continue
                try:
                    filled = runner.text(raw)
                except TracerError:
                    continue  # check_lesson reports a value that cannot be computed
                given = _given_away(filled, later)
                if given is None:
                    continue
                line, column = _locate(source, raw, step.line, nth)
                found.append(
                    Problem(
                        line,
                        column,
                        f"warning: {raw} in the {step.kind} reads '?' here: its value, {filled}, "
                        f"is the answer of the quiz at line {given.quiz.line}, which is not "
                        "answered yet; move this text after that quiz, or show another value",
                        path,
                    )
                )
    return found


def _given_away(filled: str, kept: list[Secret]) -> Secret | None:
    for _, value in numbers_in(filled):
        for secret in kept:
            if secret.near(value):
                return secret
    return None


def first_tensor_only(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each tensor a step names by its stage alone, with ``then``, where the stage
    has several tensors: the operations apply to the first, the only one shown."""
    found: list[Problem] = []
    for step in lesson.steps:
        for ref in step.tables():
            if ref.tensor is not None or not ref.then:
                continue
            try:
                names = list(runner.tensor(ref).stage.tensors)
            except TracerError:
                continue  # check_lesson reports it
            if len(names) < 2:
                continue
            line, column = (ref.line, ref.column) if ref.line else (step.line, step.column)
            found.append(
                Problem(
                    line,
                    column,
                    f"warning: stage '{ref.stage}' has {len(names)} tensors "
                    f"({', '.join(names)}); 'then' applies to the first, '{names[0]}', the only "
                    f"one shown: write 'tensor: {names[0]}' to say so, or one show per tensor",
                    path,
                )
            )
    return found


def _locate(source: list[str], needle: str, line: int, nth: int) -> tuple[int, int]:
    """Where the ``nth`` ``needle`` is written from line ``line`` on (that line if not found)."""
    count = 0
    for index in range(max(line - 1, 0), len(source)):
        start = source[index].find(needle)
        while start >= 0:
            if count == nth:
                return index + 1, start + 1
            count += 1
            start = source[index].find(needle, start + 1)
    return line, 1
