"""Quizzes that give their answer away, as ``attn lesson check`` reports them.

Hiding (:mod:`tracer.lessons.hiding`) decides what every step hides while a quiz
is not answered: each number within the quiz's tolerance of its answer, on any
table, title or piece of prose, and the rest of a row that adds up to 1. What
hiding cannot mend is the author's to change, and is reported here, at the quiz's
line and column (a question, choice or hint that states it: where those words are
written)::

    from tracer.lessons.giveaways import giveaways
    problems = giveaways(lesson, runner, path)   # [] when no quiz gives its answer away

- the quiz's own question, a choice or a hint states its answer (a "?" in the
  question would read as a riddle, not a question): reword it;
- more than :data:`~tracer.lessons.hiding.MAX_COPIES` other cells of its tables read
  exactly its answer: hidden, each "?" says the answer all the same (the zeros of
  a dropout or a causal table): ask about a number that singles out one cell;
- a choice quiz's hint names its right choice, whole, and no wrong one ("Think about it;
  dividing by the sum can"), where its question does not name it already
  (:func:`named_choices`): the hint is the answer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.hiding import MAX_COPIES, Secret, lesson_secrets, quiz_id, quiz_tables
from tracer.lessons.model import Lesson, Quiz
from tracer.lessons.prose import ANSWER, placeholders
from tracer.lessons.statements import locate, source_lines
from tracer.lessons.views import live, quiz_at
from tracer.render.text import format_number
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner


def giveaways(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A problem at each number quiz whose answer hiding cannot keep off its screen."""
    quizzes = ((n, quiz_at(lesson, n)) for n in range(len(lesson.steps)))
    every = frozenset(quiz_id(n, quiz) for n, quiz in quizzes if quiz is not None)
    problems = []
    source = source_lines(lesson)
    for secret in lesson_secrets(lesson, runner):
        quiz = secret.quiz
        said, text = _stated(secret, runner)
        if said:
            line, column = _words_at(source, text, quiz)
            problems.append(
                Problem(
                    line,
                    column,
                    f"the quiz's {said} states its answer ({format_number(secret.value)}); "
                    "word it without the number, so the answer is not on the quiz's screen",
                    path,
                )
            )
        # Its tables as drawn once answered: what the walk would hide besides its own cell.
        try:
            tables = quiz_tables(lesson, runner, secret.number, every).tables
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            continue  # the step's own problem, reported where it is
        drawn = format_number(secret.value)
        for table in tables:
            values = table.resolved.tensor.detach().cpu().double().reshape(-1).tolist()
            copies = sum(1 for value in values if format_number(float(value)) == drawn)
            if copies > MAX_COPIES + 1:  # its own cell and its copies
                problems.append(
                    Problem(
                        quiz.line,
                        quiz.column,
                        f"{copies} cells of '{table.name}' read the answer ({drawn}): all "
                        "hidden, each '?' still says it; ask about a number that singles out "
                        "one cell",
                        path,
                    )
                )
    return problems


def named_choices(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A problem at each hint of a choice quiz that names a right choice, whole, and no wrong
    choice, where the question does not name it already: read before answering, the hint
    says which choice to pick. Said where the hint is written."""
    source = source_lines(lesson)
    problems = []
    for number in range(len(lesson.steps)):
        quiz = quiz_at(lesson, number)
        if quiz is None or quiz.quiz_kind not in ("choice", "multiple") or not quiz.hints:
            continue
        try:
            answer = runner.answer(quiz)
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            continue  # the quiz's own problem, reported where it is
        right = {answer} if isinstance(answer, int) else set(answer)  # type: ignore[arg-type]
        rights = [c for n, c in enumerate(quiz.choices) if n in right]
        wrongs = [c for n, c in enumerate(quiz.choices) if n not in right]
        question = live(runner, quiz.question, quiz)
        for count, hint in enumerate(quiz.hints, start=1):
            said = live(runner, hint, quiz)
            if any(_names(said, wrong) for wrong in wrongs):
                continue  # it weighs the choices: no answer
            named = next((c for c in rights if _names(said, c) and not _names(question, c)), None)
            if named is None:
                continue
            line, column = _words_at(source, hint, quiz)
            problems.append(
                Problem(
                    line,
                    column,
                    f"the quiz's hint {count} names its right choice ('{named}') and no other; "
                    "a hint that points at one choice is the answer: hint at how to work it "
                    "out instead",
                    path,
                )
            )
    return problems


def _words_at(source: list[str], text: str, quiz: Quiz) -> tuple[int, int]:
    """Where ``text`` of ``quiz`` is written, which the teacher rewords (not the ``- quiz:``);
    the quiz's own place when the words cannot be found."""
    line, column = locate(source, " ".join(text.split()), quiz.line)
    if (line, column) == (quiz.line, 1):
        return quiz.line, quiz.column
    return line, column


def _names(text: str, choice: str) -> bool:
    """Whether ``text`` says ``choice`` whole, as words (case and spacing aside)."""
    words = " ".join(choice.split())
    if not words:
        return False
    pattern = r"(?<!\w)" + re.escape(words).replace(r"\ ", r"\s+") + r"(?!\w)"
    return re.search(pattern, text, re.IGNORECASE) is not None


def _stated(secret: Secret, runner: LessonRunner) -> tuple[str, str]:
    """Which of the quiz's own prose states its answer, and its text (("", "") when none)."""
    quiz = secret.quiz
    kept = (secret,)
    texts = [("question", quiz.question)]
    texts += [(f"choice {n}", choice) for n, choice in enumerate(quiz.choices, start=1)]
    texts += [(f"hint {n}", hint) for n, hint in enumerate(quiz.hints, start=1)]
    for what, text in texts:
        if any(placeholder.name == ANSWER for placeholder in placeholders(text)):
            continue  # the loader reports {{answer}} outside an explanation
        if live(runner, text, quiz, kept) != live(runner, text, quiz):
            return what, text
    return "", ""
