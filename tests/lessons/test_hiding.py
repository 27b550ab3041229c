"""A sentence that states an unanswered quiz's answer is left out of every screen
(:mod:`tracer.lessons.hiding`), in every front end, until the quiz is answered; and the
detection is precise: a sentence that shares words with a wrong choice, names a row by its
number or counts the question's own setting stays.

The number quiz's answer (6 scores in a row of six tokens) is counted by hand from the
built-in inputs, never taken from the walk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import forked
from tracer.lessons.hiding import Statement
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import parse_lesson
from tracer.lessons.model import Lesson, Quiz
from tracer.lessons.unsaid import sentences, statement
from tracer.lessons.views import step_view
from tracer.plugin_host import PluginHost
from tracer.session.lesson import start_session
from tracer.text.export import markdown
from tracer.text.plain_lesson import plain_lines

RIGHT = "a token's key depends only on that token, and causal attention never lets it see later"
WRONG = "they are approximations that are good enough"
COUNT = "{variant: vectorized, stage: scores, then: [{pick: 0}, {scale: 0}, exp, {sum: 0}]}"
TOKENS = 6
"""The built-in inputs' tokens: "Your journey starts with one step"."""

LESSON = f"""title: T
summary: >-
  A row of scores holds one score per key. Causal attention never lets a token see later
  tokens, so its key depends only on it.
values:
  width: {COUNT}
steps:
  - narration: >-
      The row of "Your" holds {{{{width}}}} scores in all. Softmax comes next.
  - show: {{variant: vectorized, stage: weights}}
  - quiz:
      id: width
      question: How many scores does the row of "Your" hold in all?
      answer: {COUNT}
      tolerance: 0
  - quiz:
      id: why
      question: Why may a decoder keep the old keys and values?
      choices:
        - {WRONG}
        - "{RIGHT}"
      answer: "{RIGHT}"
      hints:
        - Its key depends only on that token, since causal attention never lets it see later.
        - Think of what a later token could change.
  - checkpoint:
      points:
        - Causal attention never lets a token see later tokens, so its key depends only on it.
        - Approximations that are good enough are not what a cache keeps.
        - Row 6 of a longer text would hold more.
"""

SAID_WIDTH = "(said once the quiz at step 3 is answered)"
SAID_WHY = "(said once the quiz at step 4 is answered)"


@pytest.fixture
def lesson(host: PluginHost) -> Lesson:
    return parse_lesson(LESSON, "l.yaml", host)


def test_a_statement_is_left_out_of_every_screen_of_the_session_until_answered(
    lesson: Lesson, host: PluginHost
) -> None:
    """The app, ``-i`` and the serve front end draw the session: its summary, each step and
    the end of the lesson leave the statement out, and say it once the quiz is answered."""
    session = start_session(lesson, host, Path("l.yaml"))
    session.attach(None)
    try:
        assert session.intro() == f"A row of scores holds one score per key. {SAID_WHY}."
        session.go_to(0)
        assert session.view().step.text == f"{SAID_WIDTH}. Softmax comes next."
        session.go_to(4)
        points = session.view().step.points
        assert points[0] == f"{SAID_WHY}."
        # Shares words with the wrong choice only, or names a row by its number: no claim.
        assert points[1:] == lesson.steps[4].points[1:]  # type: ignore[union-attr]
        assert RIGHT not in session.summary() and SAID_WHY in session.summary()
        # The app draws a quiz's question and choices through the session's text: its own
        # right choice stays a choice.
        why = lesson.steps[3]
        assert isinstance(why, Quiz)
        assert session.text(RIGHT, why) == RIGHT
        # Its hints are read before it is answered: one that states it is left out, in the
        # app (the session's text) and in -i (the session's hint) alike.
        assert session.text(why.hints[0], why) == f"{SAID_WHY}."
        assert session.text(why.hints[1], why) == why.hints[1]
        session.go_to(3)
        assert session.hint() == f"{SAID_WHY}."
        assert session.hint() == why.hints[1]
        assert session.text(lesson.steps[4].points[0], why) == lesson.steps[4].points[0]  # type: ignore[union-attr]

        session.go_to(2)
        assert session.answer(str(TOKENS)).right
        session.go_to(0)
        assert session.view().step.text == f'The row of "Your" holds {TOKENS} scores in all. ' + (
            "Softmax comes next."
        )
        session.go_to(3)
        assert session.answer("1").right is False  # answered, wrong: said all the same
        assert "Causal attention never lets a token see later tokens" in session.intro()
        assert "Causal attention never lets a token see later tokens" in session.summary()
        session.go_to(4)
        assert session.view().step.points == lesson.steps[4].points  # type: ignore[union-attr]
    finally:
        session.close()


def test_text_front_ends_leave_it_out_before_the_quiz_and_say_it_after(
    lesson: Lesson, host: PluginHost
) -> None:
    """``--plain`` and the exports read top to bottom: the summary and the narration before
    the quiz leave the statement out; the checkpoint after the quizzes says it."""
    runner = LessonRunner(lesson, host)
    try:
        for text in ("\n".join(plain_lines(lesson, host, runner=runner)), markdown(lesson, host)):
            head, _, tail = text.partition("How many scores")
            assert "holds 6 scores" not in head and f"{SAID_WIDTH}. Softmax" in head
            assert "Causal attention never lets" not in head and SAID_WHY in head
            assert "Causal attention never lets a token see later tokens" in tail
        assert step_view(lesson, runner, 0, answered=("width",)).text.startswith(
            'The row of "Your" holds 6 scores'
        )
    finally:
        runner.close()


def test_the_quiz_on_screen_keeps_its_question_and_choices(
    lesson: Lesson, host: PluginHost
) -> None:
    runner = LessonRunner(lesson, host)
    try:
        view = step_view(lesson, runner, 3, answered=())
        assert view.choices == (WRONG, RIGHT)
        assert view.text == "Why may a decoder keep the old keys and values?"
    finally:
        runner.close()


def test_lesson_check_warns_at_a_live_value_that_states_a_number_where_it_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lesson.yaml"
    path.write_text(LESSON, encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.replace(f"{path}:", "") for line in result.stdout.splitlines()]
    assert any(
        line.startswith("9:7: warning: 'The row of \"Your\" holds {{width}} scores in all'")
        and "quiz at line 11" in line
        for line in lines
    ), lines
    assert any(line.startswith("3:44: warning: 'Causal attention never") for line in lines), lines
    assert not any(line.startswith("21:") for line in lines), lines  # after the quiz: hidden


class _Runner:
    def __init__(self, answer: float | int) -> None:
        self._answer = answer

    def answer(self, quiz: Quiz) -> float | int:
        return self._answer


def said(question: str, answer: float) -> Statement:
    quiz = Quiz(question=question, quiz_kind="number", answer=answer, tolerance=0)
    found = statement(quiz, 0, _Runner(answer))  # type: ignore[arg-type]
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("question", "answer", "sentence"),
    [
        # Issue 43's: a title counting what a quiz asks, a window's band, a row's sum.
        (
            "How many numbers does latent attention's cache keep per token here?",
            6,
            "The latent and the rotary key, 6 numbers in all, where multi-head attention keeps 32",
        ),
        ('How many keys does "step" see?', 3, "The band of the last 3 keys"),
        ('How many keys does "step" see?', 3, "Each query sees a band of three keys"),
        ('What does the row of "starts" add up to?', 1, "Each row of weights adds up to 1"),
        ("How many columns does the wrapper's output have?", 6, "The output has 6 columns"),
    ],
)
def test_a_sentence_that_states_a_number_beyond_zero(
    question: str, answer: float, sentence: str
) -> None:
    assert said(question, answer).stated_by(sentence)


@pytest.mark.parametrize(
    ("question", "answer", "sentence"),
    [
        # A number naming a row, a key, a lesson; code's settings; a decimal; a quoted token.
        ('How many keys does "step" see?', 3, "Key 3 gets the largest weight"),
        ("How many keys does grouped-query attention keep?", 8, "Lesson 8's grouped-query keys"),
        ("What weight does softmax give a single score?", 1, "softmax(scores, dim=1)"),
        ('What does the row of "starts" add up to?', 5, "The row of starts holds 0.5 at most"),
        ('How many keys does "step" see?', 3, 'The keys of "three" and "step"'),
        # The question's own setting counted: "with 3 heads ... how many columns".
        (
            "With 3 heads and d_out = 2, how many columns does the wrapper's output have?",
            6,
            "Each head's context vectors, 6 × 2 per head",
        ),
    ],
)
def test_a_sentence_that_names_or_sets_up_a_number_states_nothing(
    question: str, answer: float, sentence: str
) -> None:
    assert not said(question, answer).stated_by(sentence)


def test_sentences_split_at_points_and_never_inside_a_number_or_a_live_value() -> None:
    text = "Weights: 0.25 and {{w:.2f}} here. Next\n• one point\n• another"
    assert list(sentences(text)) == [
        "Weights: 0.25 and {{w:.2f}} here",
        "Next",
        "• one point",
        "• another",
    ]


GROUPS = """title: T
summary: S
steps:
  - show: {variant: grouped-query, stage: groups, options: {heads: 4, d_out: 8}}
  - quiz:
      id: per-group
      question: How many query heads read each key/value head, per group?
      answer:
        variant: grouped-query
        stage: groups
        options: {heads: 4, d_out: 8}
        then: [{sum: 0}]
        cell: [0]
      tolerance: 0
"""


def test_a_stage_title_that_counts_what_a_quiz_asks_is_left_out(host: PluginHost) -> None:
    """Four query heads share the one key/value head (heads 4, kv_heads 1: 4 // 1 per group);
    the stage's title says "(4 per group)" until the quiz is answered."""
    lesson = parse_lesson(GROUPS, "l.yaml", host)
    runner = LessonRunner(lesson, host)
    try:
        (table,) = step_view(lesson, runner, 0, answered=()).tables
        assert "4 per group" not in table.title
        assert "(said once the quiz at step 2 is answered)" in table.title
        (table,) = step_view(lesson, runner, 0, answered=("per-group",)).tables
        assert "(4 per group)" in table.title
    finally:
        runner.close()


def test_a_lesson_number_is_a_reference_not_an_answer() -> None:
    """Lesson 17 said "rotary embeddings (lesson ?)" while its cache quiz, whose answer is 16,
    was unanswered: a number after "lesson" names a lesson and stays; the same number
    counting something is still hidden."""
    from tracer.lessons.hiding import Secret, conceal_text

    quiz = Quiz(question="How many numbers per token?", quiz_kind="number", answer=16.0)
    kept = [Secret(0, quiz, 16.0, 0.0)]
    text = "It needs rotary embeddings (lesson 16; Lesson 16 too). It keeps 16 numbers."
    assert conceal_text(text, kept) == (
        "It needs rotary embeddings (lesson 16; Lesson 16 too). It keeps ? numbers."
    )
