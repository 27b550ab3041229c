"""What an unanswered quiz keeps off every screen in words: a sentence that states its answer
or rewords its right choice (:func:`hide_statements`), found by one detection that the walk and
``attn lesson check`` share. Numbers and cells are hidden by :mod:`tracer.lessons.hiding`."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import (
    Lesson,
    Quiz,
)
from tracer.lessons.prose import PLACEHOLDER

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner


PLAIN_LIMIT = 9
"""The largest size of a :attr:`Secret.plain` answer: a single digit."""


def quiz_id(number: int, quiz: Quiz) -> str:
    """The key a quiz's answer is saved under: its ``id:``, else its step number from 1."""
    return quiz.id or f"step-{number + 1}"


# What an unanswered quiz keeps off the screen in words ---------------------------------

SHARE = 0.55
"""The share of a right choice's own words a sentence must hold to reword it (more than half)."""
ASKED = 4
"""Words of a choice quiz's question a sentence must repeat to be read as its claim."""
MIN_SHARED = 3
"""And how many of them at least: a choice of a word or two ("journey", "softmax") names a
thing the lesson must be free to name; it is a statement from three words on."""
BESIDE = 3
"""How many words either side of a number are what the number is said about ("the last 3
keys", "6 numbers in all")."""

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
"""The small whole numbers as a sentence says them in words ("one" is how prose counts
anything, so it is never read as a statement of 1)."""

NAMING = frozenset(
    """lesson step sub chapter section figure page line row column col key query token head
    pair tile block position layer index entry slot dim axis cell item part route seed
    version""".split()  # noqa: SIM905
)
"""Words a number after them names rather than counts ("lesson 8", "key 3", "row 1"): only a
number before what it counts ("3 keys") or after a verb ("sums to 1") states a count."""
ASKING = frozenset({"many", "much"})
"""Words of a question that ask for a number without saying of what ("how many")."""
GENERIC = frozenset({"number", "token", "value"})
"""What a count is of in many sentences: no word of a question's own thing."""
SPECIFIC = 3
"""From this many words of its own (besides what it counts), a question's number is stated
only by a sentence that shares one of them."""

_ASSIGNED = re.compile(r"[A-Za-z_][\w.]*=[-−]?\d[\d.]*")
"""Code's ``dim=1``: a setting written as code, not a count."""
_CLAUSE = re.compile(r"[,:()\[\]—–]|\s-\s")
"""Where a clause ends inside a sentence."""
_WORD = re.compile(r"\d+(?:[.,]\d+)+|[a-z0-9_]+(?:'[a-z]+)?")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|`[^`\n]*`")
_SENTENCE = re.compile(r"[^.;!?\n]+(?:\n(?![ \t]*(?:\n|[•*-][ \t]))[^.;!?\n]+)*")
"""A sentence: up to . ; ! ? a blank line, or a line that starts a point (• or -)."""
_NUMBER_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def words(text: str) -> list[str]:
    """The words of ``text``, lower case, without possessives or a plural -s (a number
    written with decimals is one word: "0.5" is not "5")."""
    found = []
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s").removesuffix("'")
        if word in STOP_WORDS or word[0].isdigit():
            pass
        elif len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
            word = word[:-1]
        found.append(word)
    return found


def _unquoted(text: str) -> str:
    return _QUOTED.sub(" ", PLACEHOLDER.sub(" ", text))


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry meaning (no stop words, none quoted as a token)."""
    return frozenset(
        w for w in words(_unquoted(text)) if (w not in STOP_WORDS and len(w) > 1) or w.isdigit()
    )


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
    """The words of its question."""
    asked: frozenset[str] = frozenset()
    """Number quiz: the question's words but those beside its own numbers (its setting):
    what the number is about."""
    setting: frozenset[str] = frozenset()
    """Number quiz: the words beside the question's own numbers ("4 query heads"): a number
    that counts one of them ("the four heads") sets the lesson up, it states no answer."""
    zero: bool = False
    """Number quiz: whether the answer is 0 (said anywhere in a sentence about the question)."""

    def stated_by(self, sentence: str) -> bool:
        """Whether ``sentence`` states this quiz's answer (see the module's rules)."""
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
        if not self.said:
            return False
        # The number itself, not a token named like it: quoted words are already gone.
        plain = _ASSIGNED.sub(" ", _unquoted(sentence))
        if self.zero:  # said anywhere in a sentence that shares two of the question's words
            return bool(self.said & set(words(plain))) and len(self.about & found) >= 2
        # Beside what it counts, in the same clause ("adds up to 1 (softmax over ...)" says
        # nothing of softmax).
        specific = self.asked - GENERIC
        for clause in _CLAUSE.split(plain):
            said = words(clause)
            for at, word in enumerate(said):
                if word not in self.said or (at and said[at - 1] in NAMING):
                    continue  # "lesson 8", "key 3": names, not counts
                counted = _counted(said, at)
                if counted in self.setting:
                    continue
                if not set(said[max(at - BESIDE, 0) : at + BESIDE + 1]) & self.asked:
                    continue
                # A question that says much ("how many numbers does one head's absorbed
                # query hold") is answered by a sentence about its thing, not by any count
                # of numbers: it must share one more of its own words.
                rest = specific - {counted}
                if len(rest) < SPECIFIC or rest & found:
                    return True
        return False


def _counted(said: list[str], at: int) -> str:
    """The word the number at ``at`` counts: the next one that is no stop word ("" if none)."""
    return next((w for w in said[at + 1 : at + 3] if w not in STOP_WORDS), "")


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
        if whole < 0 or abs(value - whole) > max(quiz.tolerance, 1e-6):
            return None
        # A number of two digits or more reads "?" wherever it is written (the walk hides
        # it as a number); a single digit is how prose sets a lesson up, and a word is no
        # number: those are stated by the sentence.
        said = {str(whole)} if whole <= PLAIN_LIMIT else set()
        if 2 <= whole < len(NUMBER_WORDS) or whole == 0:
            said.add(NUMBER_WORDS[whole])
        if not said:
            return None
        question = words(_ASSIGNED.sub(" ", _unquoted(quiz.question)))
        setting = set()
        for at, word in enumerate(question):
            if word[0].isdigit() or word in NUMBER_WORDS[2:]:
                # "With 4 query heads ... how many numbers": the question's setting, not its ask
                setting.update(question[max(at - BESIDE, 0) : at + BESIDE + 1])
        about = content_words(quiz.question) - said
        asked = frozenset(w for w in about - setting - ASKING if not w[0].isdigit())
        if whole == 0:
            return Statement(quiz, number, said=frozenset({"zero"}), about=about, zero=True)
        if not asked:
            return None
        return Statement(
            quiz,
            number,
            said=frozenset(said),
            about=about,
            asked=asked,
            setting=frozenset(setting) - STOP_WORDS,
        )
    return None


def sentences(text: str) -> Iterator[str]:
    """The sentences of ``text`` (split at . ; ! ? blank lines and points), stripped."""
    for _start, _end, sentence in sentence_spans(text):
        yield sentence


def sentence_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, the sentence's words on one line) for each sentence of ``text``; a live
    value's ``{{ }}`` and a number's decimal point never end one."""
    masked = PLACEHOLDER.sub(lambda m: "x" * len(m.group()), text)
    masked = _NUMBER_DOT.sub("x", masked)
    for match in _SENTENCE.finditer(masked):
        start, end = match.span()
        start += len(text[start:end]) - len(text[start:end].lstrip())
        end -= len(text[start:end]) - len(text[start:end].rstrip())
        sentence = " ".join(text[start:end].split())
        if sentence:
            yield start, end, sentence


# What the walk hides ------------------------------------------------------------------


def said_after(statement: Statement) -> str:
    """What a sentence stating ``statement`` reads while its quiz is unanswered."""
    return f"(said once the quiz at step {statement.number + 1} is answered)"


def lesson_statements(lesson: Lesson, runner: LessonRunner) -> tuple[Statement, ...]:
    """Every quiz's answer in ``lesson`` as a statement (computed once per runner)."""
    return runner.once(
        "statements",
        lambda: tuple(
            said
            for number, step in enumerate(lesson.steps)
            if step.kind == "quiz" and (said := statement(step, number, runner))
        ),
    )


def unsaid(
    lesson: Lesson, runner: LessonRunner, number: int, answered: Collection[str] | None = None
) -> tuple[Statement, ...]:
    """The statements step ``number`` must not make: those of the quizzes not answered.

    ``answered``: the ids (:func:`quiz_id`) answered (the session's); None reads the lesson
    top to bottom, as ``--plain`` and the exports print it: the quizzes from this step on
    are unanswered (those before are answered where they stand). ``number`` -1: before the
    first step (the lesson's summary).
    """
    every = lesson_statements(lesson, runner)
    if answered is None:
        return tuple(said for said in every if said.number >= number)
    return tuple(said for said in every if quiz_id(said.number, said.quiz) not in answered)


def stating(sentence: str, said: Iterable[Statement]) -> Statement | None:
    """The first statement of ``said`` that ``sentence`` makes (None: it makes none)."""
    return next((one for one in said if one.stated_by(sentence)), None)


def hide_statements(
    text: str,
    said: Iterable[Statement],
    *,
    show: Callable[[str], str] = str,
    filled: Callable[[str], str] | None = None,
) -> str:
    """``text`` with each sentence that makes a statement of ``said`` written as
    :func:`said_after`, the rest through ``show`` (the walk's: live values filled in, numbers
    near an answer as "?"). ``filled``: a sentence with its live values filled in, read for
    the statement ("{{count}} numbers in all" states 6); the sentence as written if None."""
    said = tuple(said)
    if not said or not text:
        return show(text)
    parts: list[str] = []
    last = 0
    for start, end, sentence in sentence_spans(text):
        if filled is not None and "{{" in sentence:
            with contextlib.suppress(TracerError):  # else as written, as the step shows it
                sentence = " ".join(filled(text[start:end]).split())
        made = stating(sentence, said)
        if made is None:
            continue
        parts += [show(text[last:start]) if last < start else "", said_after(made)]
        last = end
    if not parts:
        return show(text)
    return "".join(parts) + (show(text[last:]) if last < len(text) else "")
