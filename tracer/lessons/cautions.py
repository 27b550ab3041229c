"""Warnings ``attn lesson check`` gives from running a lesson: what a learner would see that the
author may not mean, though the lesson loads and runs as it is.

- A live value in prose that reads "?" where it is shown: read top to bottom, its value is (near)
  the answer of a quiz not answered yet, so the walk hides it ("and by ? with a base of 100").
- A ``show`` of a stage with several tensors that applies ``then`` to one of them: it shows the
  stage's first tensor only, so the warning names it and how to say so.

Both are computed on the lesson's own runner, after :func:`tracer.lessons.check.check_lesson`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Checkpoint, Lesson, LessonStep, Narration, Quiz, Show
from tracer.lessons.prose import ANSWER, placeholders
from tracer.lessons.walk import Secret, numbers_in, secrets
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.runner import LessonRunner


def cautions(lesson: Lesson, runner: LessonRunner) -> list[Problem]:
    """Every warning of this module for ``lesson``, in file order."""
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    found = [*hidden_live_values(lesson, runner, path), *first_tensor_only(lesson, runner, path)]
    return sorted(found, key=lambda p: (p.line, p.column))


def _prose(step: LessonStep) -> Iterator[tuple[str, str]]:
    """(which prose, its text) for each text of ``step`` shown before its quiz is answered."""
    if isinstance(step, Narration):
        yield "narration", step.text
    elif isinstance(step, Checkpoint):
        yield "checkpoint", step.title
        for point in step.points:
            yield "checkpoint", point
    elif isinstance(step, Quiz):
        yield "question", step.question
        for hint in step.hints:
            yield "a hint", hint
        for choice in step.choices:
            yield "a choice", choice
    else:
        yield "caption", getattr(step, "caption", "")


def hidden_live_values(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each live value whose prose reads it as "?" when the lesson is read top to
    bottom (``--plain``, the exports, a learner answering in order): its value gives away a later
    quiz's answer, so the walk hides it. A quiz's own answer in its own question is refused by
    the giveaway check instead."""
    source = _source_lines(lesson)
    found: list[Problem] = []
    for number, step in enumerate(lesson.steps):
        later = [secret for secret in secrets(lesson, runner, number) if secret.number != number]
        if not later:
            continue
        seen: dict[str, int] = {}
        for what, text in _prose(step):
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
                        f"warning: {raw} in the {what} reads '?' here: its value, {filled}, "
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
    """A warning at each ``show`` of a stage with several tensors that names none of them and
    applies ``then``: the operations apply to the stage's first tensor, the only one shown."""
    found: list[Problem] = []
    for step in lesson.steps:
        if not isinstance(step, Show) or step.ref.tensor is not None or not step.ref.then:
            continue
        try:
            names = list(runner.tensor(step.ref).stage.tensors)
        except TracerError:
            continue  # check_lesson reports it
        if len(names) < 2:
            continue
        ref = step.ref
        line, column = (ref.line, ref.column) if ref.line else (step.line, step.column)
        found.append(
            Problem(
                line,
                column,
                f"warning: stage '{ref.stage}' has {len(names)} tensors ({', '.join(names)}); "
                f"with 'then' this show applies the operations to the first, '{names[0]}', and "
                f"shows that one only: write 'tensor: {names[0]}' to say so, or one show per tensor",
                path,
            )
        )
    return found


def _source_lines(lesson: Lesson) -> list[str]:
    if lesson.path is None:
        return []
    try:
        return lesson.path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


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
