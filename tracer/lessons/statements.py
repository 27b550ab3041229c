"""Prose that states a quiz's answer in words, as ``attn lesson check`` warns about it.

Hiding (:mod:`tracer.lessons.hiding`) hides numbers; a sentence can give a quiz away without
one. Each quiz knows its answer as a statement (:func:`statement`): a choice quiz, the text of
its right choice; a number quiz whose answer is a small whole number, that number as a word
("zero", "three") said about what its question asks. A sentence of the lesson
states it when:

- choice quiz: it holds at least half of the right choice's own words (those no wrong choice
  has), and at least three of them ("a rotation sits between
  the query and the key" for "its rotation depends on the key's position, so it sits between
  the query and W_uk");
- number quiz: it says the number in a word (digits are the walk's to hide, and "one" is how
  prose counts anything), and shares at least two words with the question ("Each row of dS sums to zero" for "What does the row of dS for
  'journey' add up to?").

The sentences looked at are those a learner reads before answering: the lesson's summary,
every step before the quiz (narration, captions, other quizzes' questions, choices and
hints), the quiz's own hints, and every checkpoint's points wherever they stand (a summary
at the end is read by a learner who skipped the quiz, who may then go back and answer it).
Words quoted in double quotes are tokens ("one"), not claims. Each warning is at the
``file:line:column`` where the sentence is written::

    from tracer.lessons.statements import stated_answers
    warnings = stated_answers(lesson, runner, path)   # [] when no sentence gives a quiz away
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Lesson, LessonStep, Quiz
from tracer.lessons.prose import PLACEHOLDER
from tracer.lessons.views import quiz_at
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner

SHARE = 0.55
"""The share of a right choice's own words a sentence must hold to reword it (more than half)."""
ASKED = 4
"""Words of a choice quiz's question a sentence must repeat to be read as its claim."""
MIN_SHARED = 3
"""And how many of them at least: a choice of a word or two ("journey", "softmax") names a
thing the lesson must be free to name; it is a statement from three words on."""

STOP_WORDS = frozenset(
    """a an the and or but nor of to in on at by for with from as into onto than then that
    this these those it its is are was were be been being do does did has have had not no
    so if when where which who whom whose what why how all any each every some such only
    same other more most less least very can could may might must shall should will would
    there here their they them he she his her we our you your i me my one's itself up out
    about over under through again once also just too per one""".split()  # noqa: SIM905
)
"""Words that say nothing by themselves (kept out of the overlap)."""

NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()  # noqa: SIM905
"""The small whole numbers as a sentence says them in words."""

_WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|`[^`\n]*`")
_SENTENCE = re.compile(r"[^.;!?\n]+(?:\n(?![ \t]*\n)[^.;!?\n]+)*")


def words(text: str) -> list[str]:
    """The words of ``text``, lower case, without possessives or a plural -s."""
    found = []
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s").removesuffix("'")
        if word in STOP_WORDS:
            pass
        elif len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
            word = word[:-1]
        found.append(word)
    return found


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry meaning (no stop words, none quoted as a token)."""
    text = _QUOTED.sub(" ", PLACEHOLDER.sub(" ", text))
    return frozenset(w for w in words(text) if (w not in STOP_WORDS and len(w) > 1) or w.isdigit())


@dataclass(frozen=True)
class Statement:
    """A quiz's answer as words a sentence could state it in."""

    quiz: Quiz
    number: int
    """The quiz's step (0-based)."""
    own: frozenset[str] = frozenset()
    """Choice quiz: the right choice's words that no wrong choice and not the question has."""
    wrong: tuple[frozenset[str], ...] = ()
    """Choice quiz: each wrong choice's words that the right one and the question have not."""
    said: frozenset[str] = frozenset()
    """Number quiz: the answer as digits and as a word."""
    about: frozenset[str] = frozenset()
    """Number quiz: the words of its question."""

    def stated_by(self, sentence: str) -> bool:
        found = content_words(sentence)
        if self.own:
            shared = len(self.own & found)
            if shared >= MIN_SHARED and shared >= SHARE * len(self.own):
                return True  # the right choice reworded
            # Or the question's claim, answered by the right choice's word ("NTK-aware
            # scaling changes the base and keeps the fastest pair").
            # A count ("three entries") is the lesson's setting, not the choice's claim.
            named = {w for w in self.own & found if not w.isdigit() and w not in NUMBER_WORDS}
            asked = len(self.about & found) >= ASKED
            beats = len(named) > max((len(w & found) for w in self.wrong), default=0)
            return asked and beats and len(named) >= SHARE * len(self.own) - 0.1
        if self.said:
            # The number itself, not a token named like it: quoted words are already gone.
            return bool(self.said & set(words(_QUOTED.sub(" ", sentence)))) and (
                len(self.about & found) >= 2
            )
        return False


def statement(quiz: Quiz, number: int, runner: LessonRunner) -> Statement | None:
    """What ``quiz`` answers, as a statement (None: nothing a sentence could state)."""
    if quiz.quiz_kind == "choice":
        try:
            right = runner.answer(quiz)
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            return None
        if not isinstance(right, int) or not 0 <= right < len(quiz.choices):
            return None
        asked = content_words(quiz.question)
        each = [content_words(choice) for choice in quiz.choices]
        others = frozenset().union(*(w for i, w in enumerate(each) if i != right))
        own = each[right] - others - asked
        wrong = tuple(w - each[right] - asked for i, w in enumerate(each) if i != right)
        if not own:
            return None
        return Statement(quiz, number, own=own, wrong=wrong, about=asked)
    if quiz.quiz_kind == "number":
        try:
            value = float(runner.answer(quiz))  # type: ignore[arg-type]
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError, TypeError):
            return None
        whole = round(value) if math.isfinite(value) else -1
        if not 0 <= whole < len(NUMBER_WORDS) or abs(value - whole) > max(quiz.tolerance, 1e-6):
            return None
        if whole != 0:
            # "four query heads": a count in words is how prose sets a lesson up; a claim
            # that something is zero ("each row sums to zero") is the fact a quiz asks for.
            return None
        said = NUMBER_WORDS[whole]
        about = content_words(quiz.question) - {str(whole), said}
        return Statement(quiz, number, said=frozenset({said}), about=about)
    return None


def sentences(text: str) -> Iterator[str]:
    """The sentences of ``text`` (split at . ; ! ? and blank lines), stripped."""
    for match in _SENTENCE.finditer(text):
        sentence = " ".join(match.group().split())
        if sentence:
            yield sentence


def _read_before(lesson: Lesson, statement: Statement) -> Iterator[tuple[LessonStep | None, str]]:
    """(step, text) for each piece of prose a learner reads before answering the quiz: each
    step's ``prose()`` (an earlier quiz's explanation included: it is read once that quiz is
    answered), and a checkpoint's wherever it stands."""
    yield None, lesson.summary
    for number, step in enumerate(lesson.steps):
        if number < statement.number or step.kind == "checkpoint":
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
            for sentence in sentences(text):
                if not said.stated_by(sentence):
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
