"""Prose that states a quiz's answer in words, as ``attn lesson check`` warns about it.

Which sentence states a quiz's answer is decided in :mod:`tracer.lessons.hiding` (one
detection: the walk hides the same sentences while the quiz is unanswered): a choice quiz's
right choice reworded, or a number quiz's whole-number answer said beside what its question
asks ("6 numbers in all", "each row of dS sums to zero"), in the words as written or with
their live values filled in.

The sentences looked at are those a learner reads before answering: the lesson's summary,
every step before the quiz (narration, captions, other quizzes' questions, choices and
hints) and the quiz's own hints. A step after the quiz (a checkpoint that sums up) may say
it: a learner who skipped the quiz reads "(said once the quiz at step 7 is answered)" there
instead, in every front end, until it is answered.
Each warning is at the ``file:line:column`` where the sentence is written::

    from tracer.lessons.statements import stated_answers
    warnings = stated_answers(lesson, runner, path)   # [] when no sentence gives a quiz away
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Lesson, LessonStep
from tracer.lessons.unsaid import (
    NUMBER_WORDS,
    STOP_WORDS,
    Statement,
    content_words,
    sentence_spans,
    sentences,
    statement,
    words,
)
from tracer.lessons.views import quiz_at
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner

__all__ = [
    "NUMBER_WORDS",
    "STOP_WORDS",
    "Statement",
    "content_words",
    "locate",
    "sentences",
    "source_lines",
    "stated_answers",
    "statement",
    "words",
]


def _read_before(lesson: Lesson, statement: Statement) -> Iterator[tuple[LessonStep | None, str]]:
    """(step, text) for each piece of prose a learner reads before answering the quiz: each
    step's ``prose()`` (an earlier quiz's explanation included: it is read once that quiz is
    answered). A step after the quiz may say it: the walk leaves the sentence out while the
    quiz is unanswered (a learner who skipped it), as it does the end-of-lesson summary."""
    yield None, lesson.summary
    for number, step in enumerate(lesson.steps):
        if number < statement.number:
            yield from ((step, text) for text in step.prose())
        elif number == statement.number:
            yield from ((step, hint) for hint in statement.quiz.hints)


def stated_answers(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each sentence that states a quiz's answer before it is answered."""
    source = source_lines(lesson)
    found: list[Problem] = []
    for number in range(len(lesson.steps)):
        step = quiz_at(lesson, number)
        if step is None:
            continue
        said = statement(step, number, runner)
        if said is None:
            continue
        for where, text in _read_before(lesson, said):
            for start, end, sentence in sentence_spans(text):
                read = sentence
                if "{{" in sentence:  # "{{count}} numbers in all" states what it fills in
                    own = where if where is not None and where.kind == "quiz" else None
                    with contextlib.suppress(TracerError):
                        read = " ".join(runner.text(text[start:end], own).split())
                if not said.stated_by(read):
                    continue
                line, column = locate(source, sentence, where.line if where else 1)
                what = "right choice" if said.own else "answer"
                found.append(
                    Problem(
                        line,
                        column,
                        f"warning: '{_short(sentence)}' states the {what} of the quiz at line "
                        f"{step.line} before it is answered; say it after the quiz (not in a "
                        "summary), or ask first",
                        path,
                    )
                )
    return sorted(set(found), key=lambda p: (p.line, p.column, p.message))


def _short(sentence: str, limit: int = 60) -> str:
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def source_lines(lesson: Lesson) -> list[str]:
    if lesson.path is None:
        return []
    try:
        return lesson.path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def locate(source: list[str], sentence: str, line: int) -> tuple[int, int]:
    """Where ``sentence`` starts in the file, from line ``line`` on: its first words, which a
    folded or literal block keeps on one line (``line``, column 1, if not found)."""
    start = sentence.split()
    for count in (4, 3, 2, 1):
        needle = " ".join(start[:count])
        if not needle:
            break
        for index in range(max(line - 1, 0), len(source)):
            column = source[index].find(needle)
            if column >= 0:
                return index + 1, column + 1
    return line, 1
