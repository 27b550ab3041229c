"""A sentence that states a quiz's answer in words (:mod:`tracer.lessons.statements`).

The sentences are the ones the shipped lessons said before they were reworded (issue 43's
list) and the ones they say now: each old one states its quiz's answer, and a sentence that
only sets the lesson up ("four query heads", "one key") does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import forked
from tracer.lessons.model import Quiz
from tracer.lessons.statements import Statement, sentences, statement


class _Runner:
    """The two answers a quiz can have, without running a variant."""

    def __init__(self, answer: float | int) -> None:
        self._answer = answer

    def answer(self, quiz: Quiz) -> float | int:
        return self._answer


def said(quiz: Quiz, answer: float | int) -> Statement:
    found = statement(quiz, 0, _Runner(answer))  # type: ignore[arg-type]
    assert found is not None
    return found


ROPE_APART = Quiz(
    question="Why is the rotary part of the key kept apart instead of being folded like W_uk?",
    quiz_kind="choice",
    answer=0,
    choices=(
        "its rotation depends on the key's position, so it sits between the query and W_uk "
        "and is different for every key",
        "the rotary key is too small to fold",
        "a rotation is not a linear map",
    ),
)
PAGED = Quiz(
    question="Does a paged cache compute the attention of a contiguous cache, or an "
    "approximation of it?",
    quiz_kind="choice",
    answer=0,
    choices=(
        "that attention: it reads the same keys and values, only from other places in memory",
        "an approximation: the blocks round the cache to whole blocks",
        "that attention only when the block size divides the text's length",
    ),
)
NTK = Quiz(
    question="NTK-aware scaling changes the base to base · s^(d/(d−2)). Which pair keeps "
    "its speed?",
    quiz_kind="choice",
    answer=0,
    choices=("pair 0, the fastest", "pair 3, the slowest", "none of them"),
)
ROW_SUM = Quiz(
    question='What does the row of dS for "journey" add up to?',
    quiz_kind="number",
    answer=0.0,
    tolerance=0.005,
)
CACHE = Quiz(
    question="With 4 query heads sharing one key/value head of 2 columns, how many numbers "
    "does the cache keep for each token (keys and values)?",
    quiz_kind="number",
    answer=4.0,
)


@pytest.mark.parametrize(
    ("quiz", "answer", "text"),
    [
        (
            ROPE_APART,
            0,
            "Position needs rotary embeddings (lesson 16), but a rotation sits between the "
            "query and the key and would have to be applied to the rebuilt keys.",
        ),
        (
            PAGED,
            0,
            "It reads the same keys and values as a contiguous cache, in the same order, so "
            "the attention is that of lesson 9.",
        ),
        (
            NTK,
            0,
            "Linear scaling divides every speed by the factor; NTK-aware scaling changes the "
            "base and keeps the fastest pair; YaRN keeps the fast pairs.",
        ),
        (ROW_SUM, 1e-8, "Each row of dS sums to zero; hidden keys have P = 0 and so dS = 0."),
    ],
)
def test_the_sentences_the_lessons_said_state_the_answer(
    quiz: Quiz, answer: float, text: str
) -> None:
    statement_ = said(quiz, answer)
    assert any(statement_.stated_by(sentence) for sentence in sentences(text))


@pytest.mark.parametrize(
    ("quiz", "answer", "text"),
    [
        (
            ROPE_APART,
            0,
            "Position needs rotary embeddings (lesson 16). DeepSeek-V2 does not turn the "
            "rebuilt keys; it gives each key a separate rotary part.",
        ),
        (PAGED, 0, "Each step finds its keys and values through the table."),
        (
            NTK,
            0,
            "Linear scaling divides every speed by the factor; NTK-aware scaling changes the "
            "base, which slows the slow pairs most.",
        ),
        (
            ROW_SUM,
            1e-8,
            "dS = P ∘ (dP - D) is a weight times a difference, so a hidden key gets no gradient.",
        ),
        (ROW_SUM, 1e-8, 'The token "zero" is not a number here: the row of dS for it.'),
    ],
)
def test_the_sentences_they_say_now_do_not(quiz: Quiz, answer: float, text: str) -> None:
    statement_ = said(quiz, answer)
    assert not any(statement_.stated_by(sentence) for sentence in sentences(text))


def test_a_count_in_words_that_sets_a_lesson_up_is_no_claim() -> None:
    """Four heads are the question's own setting ("with 4 query heads ..., how many numbers
    ..."): a sentence counting them states nothing; one that counts what it asks does."""
    cache = said(CACHE, 4.0)
    for setting in (
        "One key projection of 2 columns serves all four query heads.",
        "It is the average of the four heads' key columns of the multihead variant.",
        "Take 4 heads of 2 columns.",
    ):
        assert not cache.stated_by(setting), setting
    assert cache.stated_by("So the cache keeps 4 numbers for each token.")
    assert cache.stated_by("Each token costs the cache four numbers.")


RIGHT = "a token's key depends only on that token, and causal attention never lets it see later"


def test_lesson_check_reports_a_summary_that_states_a_right_choice_where_it_is_written(
    tmp_path: Path,
) -> None:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(
        "title: t\nsummary: s\ninputs: four-words\nsteps:\n"
        "  - checkpoint:\n"
        "      points:\n"
        "        - Nothing changes.\n"
        "        - Causal attention never lets a token see later tokens, so its key depends "
        "only on it.\n"
        "  - quiz:\n"
        "      question: Why may a decoder keep the old keys and values?\n"
        "      choices:\n"
        "        - they are approximations that are good enough\n"
        f"        - {RIGHT}\n"
        f"      answer: {RIGHT}\n"
        "  - checkpoint:\n"
        "      points:\n"
        "        - Causal attention never lets a token see later tokens, so its key depends "
        "only on it.\n",
        encoding="utf-8",
    )
    result = forked.run_attn("lesson", "check", str(lesson))
    assert result.stderr == ""
    assert result.returncode == 0  # a warning: the lesson loads and runs as it did
    lines = [line.replace(f"{lesson}:", "") for line in result.stdout.splitlines()]
    assert lines[0].startswith("8:11: warning: 'Causal attention never lets a token see later")
    assert "states the right choice of the quiz at line 9" in lines[0]
    # The checkpoint after the quiz may say it: the walk leaves it out while it is unanswered.
    assert not any(line.startswith("19:") for line in lines)
