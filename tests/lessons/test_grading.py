"""Grading quiz answers: the pure function the app and --plain share, and the quiz widget."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from textual.app import App, ComposeResult

from tests.data import seeds
from tracer.lessons.grading import (
    CellAnswer,
    answer_text,
    grade,
    parse_number,
    response_problem,
)
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import LessonError, parse_lesson
from tracer.lessons.model import Lesson, Quiz
from tracer.plugin_host import PluginHost
from tracer.session.lesson import start_session
from tracer.tui.quiz_view import QuizView

H = "title: T\nsummary: S\nsteps:\n"


def number_quiz(tolerance: float = 0.005, relative: bool = False) -> Quiz:
    return Quiz("q", "number", 0.0, tolerance=tolerance, relative=relative)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.95", 0.95), ("0,3474", 0.3474), (" -1.5 ", -1.5), ("−2", -2.0), ("1e-3", 0.001)],
)
def test_numbers_accept_a_decimal_comma(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["abc", "0.9.5", "1,000,000", "nan", "inf", "", "1/2"])
def test_what_is_not_a_number_is_not_an_answer(text: str) -> None:
    assert parse_number(text) is None
    result = grade(number_quiz(), 0.95, text)
    assert result.right is None  # nothing is revealed, the attempt is not used up
    assert result.message


def test_absolute_tolerance() -> None:
    quiz = number_quiz(0.005)
    assert grade(quiz, 0.9544, "0,95").right is True
    assert grade(quiz, 0.9544, "0.949").right is False


def test_relative_tolerance_is_a_share_of_the_answer() -> None:
    quiz = number_quiz(0.01, relative=True)  # 1%
    assert grade(quiz, 200.0, "198.5").right is True
    assert grade(quiz, 200.0, "197.9").right is False
    assert grade(quiz, -0.5, "-0.504").right is True


def test_single_choice_by_text_letter_or_number() -> None:
    quiz = Quiz("q", "choice", 1, choices=("Your", "journey", "starts"))
    assert [grade(quiz, 1, r).right for r in ("journey", "b", "B", "2", "a", "3")] == [
        True,
        True,
        True,
        True,
        False,
        False,
    ]
    assert grade(quiz, 1, "z").right is None
    assert grade(quiz, 1, "9").right is None
    assert answer_text(quiz, 1) == "journey"


def test_multiple_choice_needs_exactly_the_right_set() -> None:
    quiz = Quiz("q", "multiple", (0, 2), choices=("Your", "journey", "starts"))
    assert grade(quiz, (0, 2), "a, c").right is True
    assert grade(quiz, (0, 2), "3 1").right is True
    assert grade(quiz, (0, 2), "a").right is False
    assert grade(quiz, (0, 2), "a b c").right is False
    assert grade(quiz, (0, 2), "a, q").right is None
    assert answer_text(quiz, (0, 2)) == "Your, starts"


def test_cells_by_token_or_index() -> None:
    tokens = ("Your", "journey", "starts")
    quiz = Quiz("q", "cells", 0.0)
    answer = CellAnswer(frozenset({(0, 1), (0, 2), (1, 2)}), (3, 3), (tokens, tokens))
    assert grade(quiz, answer, "Your,journey; Your,starts; journey,starts").right is True
    assert grade(quiz, answer, "0,1 0,2 1,2").right is True
    assert grade(quiz, answer, "0,1 0,2").right is False
    assert grade(quiz, answer, "0,1 0,2 1,2 2,2").right is False
    assert grade(quiz, answer, "Your").right is None
    assert grade(quiz, answer, "0,7").right is None
    assert grade(quiz, answer, "Yours,journey").right is None
    assert answer_text(quiz, answer) == "Your,journey; Your,starts; journey,starts"


def test_an_empty_response_is_not_an_answer() -> None:
    assert response_problem(number_quiz(), "  ") == "type an answer first"


# Loading the new quiz kinds -------------------------------------------------------------------


def load(text: str, host: PluginHost) -> Lesson:
    return parse_lesson(H + text, "l.yaml", host)


def test_percent_tolerance_is_relative(host: PluginHost) -> None:
    lesson = load(
        "  - quiz: {question: q, tolerance: 1%, answer: {variant: naive-loop, stage: scores, "
        "cell: [0, 1]}}\n",
        host,
    )
    quiz = lesson.quizzes[0]
    assert (quiz.tolerance, quiz.relative) == (0.01, True)
    runner = LessonRunner(lesson, host)
    dot = seeds.SEED_003_DOT_0_1  # 0.9544, printed in the simple attention notebook
    assert runner.is_right(quiz, str(dot * 1.009))
    assert not runner.is_right(quiz, str(dot * 1.02))


@pytest.mark.parametrize(
    ("quiz", "expected"),
    [
        (
            "{question: q, tolerance: small, answer: 1}",
            "4:36: tolerance must be a number (0.005) or a percentage (1%), not text ('small')",
        ),
        (
            "{question: q, tolerance: one%, answer: 1}",
            "4:36: a relative tolerance is a percentage from 0% to 99%, not 'one%'",
        ),
        (
            "{question: q, tolerance: 120%, answer: 1}",
            "4:36: a relative tolerance is a percentage from 0% to 99%, not '120%'",
        ),
        (
            "{question: q, choices: [a, b], answer: [a, c]}",
            "4:54: answer 'c' is not one of the choices; choices: 'a', 'b'",
        ),
        (
            "{question: q, choices: [a, b], answer: [a, a]}",
            "4:54: answer 'a' is listed twice",
        ),
        (
            "{question: q, cells: {variant: masked, stage: scaled}, answer: 3}",
            "4:74: the answer of a 'cells' quiz names a computed tensor of the same shape "
            "(variant, stage, then...) whose non-zero cells are right, not a number (3)",
        ),
        ("{question: q, hints: [], answer: 1}", "4:32: hints is empty; give at least one hint, "
         "or leave 'hints' out"),
    ],
)  # fmt: skip
def test_bad_quizzes_are_reported_at_their_position(
    quiz: str, expected: str, host: PluginHost
) -> None:
    with pytest.raises(LessonError) as error:
        load(f"  - quiz: {quiz}\n", host)
    assert [f"{p.line}:{p.column}: {p.message}" for p in error.value.problems] == [expected]


def test_a_cells_answer_of_another_shape_is_reported_by_check(host: PluginHost) -> None:
    from tracer.lessons.check import check_lesson

    lesson = load(
        "  - quiz:\n      question: q\n      cells: {variant: masked, stage: scaled}\n"
        "      answer: {variant: masked, stage: context}\n",
        host,
    )
    assert [f"{p.line}:{p.column}: {p.message}" for p in check_lesson(lesson, host)] == [
        "7:15: the answer 'context' is 6×2 but the cells are selected from 'scaled', which is "
        "6×6; they must be the same shape"
    ]


def test_a_computed_choice_must_be_one_of_the_choices(host: PluginHost) -> None:
    from tracer.lessons.check import check_lesson

    lesson = load(
        "  - quiz:\n      question: q\n      choices: [Your, step]\n"
        "      answer: {variant: naive-loop, stage: scores, then: [{pick: journey}, argmax]}\n",
        host,
    )
    best = ("Your", "journey", "starts", "with", "one", "step")[
        max(range(6), key=lambda j: seeds.SIMPLE_SCORES[1][j])
    ]
    assert [p.message for p in check_lesson(lesson, host)] == [
        f"the computed answer is '{best}', which is not one of the choices (Your, step)"
    ]


# The quiz widget --------------------------------------------------------------------------------


class QuizApp(App[None]):
    """The quiz widget over a lesson session, as the lesson screen uses it."""

    def __init__(self, lesson: Lesson, host: PluginHost) -> None:
        super().__init__()
        self.session = start_session(lesson, host, Path("l.yaml"))
        self.runner = self.session.runner
        self.quiz = lesson.quizzes[0]
        self.responses: list[str] = []

    def compose(self) -> ComposeResult:
        yield QuizView(id="quiz")

    def on_mount(self) -> None:
        live = lambda text: self.session.text(text, self.quiz)  # noqa: E731
        self.query_one(QuizView).ask(self.quiz, None, None, live=live)

    def on_quiz_view_answered(self, event: QuizView.Answered) -> None:
        verdict = self.session.answer(event.response)
        view = self.query_one(QuizView)
        if verdict.right is None:
            view.refuse(verdict.message)
            return
        self.responses.append(event.response)
        view.feedback(event.response, verdict.right, verdict.value)


NUMBER_QUIZ = (
    "  - quiz:\n"
    "      question: 'Your · starts is {{ys}}. And Your · journey?'\n"
    "      answer: {variant: naive-loop, stage: scores, cell: [Your, journey]}\n"
    "      hints: [first hint, second hint]\n"
    "      explanation: 'It is {{answer}}.'\n"
)
VALUES = (
    "values:\n  yj: {variant: naive-loop, stage: scores, cell: [Your, journey]}\n"
    "  ys: {variant: naive-loop, stage: scores, cell: [Your, starts]}\n"
)


def quiz_app(host: PluginHost, steps: str = NUMBER_QUIZ) -> QuizApp:
    lesson = parse_lesson("title: T\nsummary: S\n" + VALUES + "steps:\n" + steps, "l.yaml", host)
    return QuizApp(lesson, host)


def shown(app: QuizApp, selector: str) -> str:
    return str(app.query_one(selector).render())


async def type_answer(pilot: object, text: str) -> None:
    app = pilot.app  # type: ignore[attr-defined]
    field = app.query_one("#quiz-input")
    field.value = text
    await pilot.press("enter")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]


async def test_the_widget_fills_live_values_and_takes_a_decimal_comma(host: PluginHost) -> None:
    app = quiz_app(host)
    async with app.run_test() as pilot:
        await pilot.pause()
        dot = f"{seeds.SEED_003_DOT_0_1:.4f}"
        x = seeds.SEED_003_INPUTS
        other = sum(a * b for a, b in zip(x[0], x[2], strict=True))  # Your · starts
        # A live value that is not the quiz's answer (that one would read "?").
        assert shown(app, "#quiz-question") == f"Your · starts is {other:.4f}. And Your · journey?"
        app.query_one("#quiz-input").focus()
        await type_answer(pilot, dot.replace(".", ","))
        assert app.responses == [dot.replace(".", ",")]
        feedback = shown(app, "#quiz-feedback")
        assert "✓ Right" in feedback and f"It is {dot}." in feedback


async def test_not_a_number_is_refused_without_revealing(host: PluginHost) -> None:
    app = quiz_app(host)
    async with app.run_test() as pilot:
        await pilot.pause()
        app.query_one("#quiz-input").focus()
        await type_answer(pilot, "about one")
        assert app.responses == []
        assert shown(app, "#quiz-feedback") == ""
        assert "Not an answer: 'about one' is not a number" in shown(app, "#quiz-hint")


async def test_one_answer_counts(host: PluginHost) -> None:
    app = quiz_app(host)
    async with app.run_test() as pilot:
        await pilot.pause()
        view = app.query_one(QuizView)
        app.query_one("#quiz-input").focus()
        await type_answer(pilot, "3")
        assert "Not quite" in shown(app, "#quiz-feedback")
        view.focus_answer()
        view.choose(1)  # a digit key after the reveal
        await type_answer(pilot, f"{seeds.SEED_003_DOT_0_1}")
        assert app.responses == ["3"]
        assert "Not quite" in shown(app, "#quiz-feedback")


async def test_hints_are_revealed_one_at_a_time(host: PluginHost) -> None:
    app = quiz_app(host)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert shown(app, "#quiz-hints") == ""
        await pilot.click("#quiz-more-hints")
        await pilot.pause()
        assert shown(app, "#quiz-hints") == "Hint 1: first hint"
        app.query_one(QuizView).show_hint()  # as the button does
        await pilot.pause()
        assert shown(app, "#quiz-hints") == "Hint 1: first hint\nHint 2: second hint"
        assert not app.query_one("#quiz-more-hints").display


async def test_multiple_choice_marks_then_checks(host: PluginHost) -> None:
    steps = (
        "  - quiz:\n      question: Which come before starts?\n"
        "      choices: [Your, journey, step]\n      answer: [Your, journey]\n"
    )
    app = quiz_app(host, steps)
    async with app.run_test() as pilot:
        await pilot.pause()
        view = app.query_one(QuizView)
        view.choose(1)
        view.choose(2)
        await pilot.pause()
        await pilot.click("#quiz-submit")
        await pilot.pause()
        assert app.responses == ["1 2"]
        assert "✓ Right" in shown(app, "#quiz-feedback")


async def test_cells_are_typed_and_checked_against_the_mask(host: PluginHost) -> None:
    steps = (
        "  - quiz:\n      question: Which cells does the mask hide?\n"
        "      cells: {variant: masked, stage: scaled}\n"
        "      answer: {variant: masked, stage: mask}\n"
    )
    app = quiz_app(host, steps)
    hidden = torch.ones(6, 6).triu(diagonal=1).nonzero().tolist()
    async with app.run_test() as pilot:
        await pilot.pause()
        app.query_one("#quiz-input").focus()
        await type_answer(pilot, "0,9")
        assert app.responses == [] and "out of range" in shown(app, "#quiz-hint")
        await type_answer(pilot, "; ".join(f"{i},{j}" for i, j in hidden))
        assert "✓ Right" in shown(app, "#quiz-feedback")


def test_a_quiz_may_show_a_tensor_to_work_from(host: PluginHost) -> None:
    from tracer.lessons.check import check_lesson
    from tracer.text.plain_lesson import plain_lines

    lesson = load(
        "  - quiz:\n      question: Your · journey?\n"
        "      show: {variant: naive-loop, stage: inputs}\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [0, 1]}\n",
        host,
    )
    quiz = lesson.quizzes[0]
    assert quiz.about is not None and quiz.about.stage == "inputs"  # never the answer's tensor
    text = "\n".join(plain_lines(lesson, host))
    assert "inputs (6×3: token × feature)" in text.split("Answer:")[0]
    assert check_lesson(lesson, host) == []
    bad = load(
        "  - quiz:\n      question: q\n      show: {variant: naive-loop, stage: inputs, "
        "tensor: nope}\n      answer: 1\n",
        host,
    )
    assert [f"{p.line}:{p.column}" for p in check_lesson(bad, host)] == [
        "6:58"
    ]  # at the tensor named


COUNT_QUIZZES = (
    "  - quiz:\n"
    "      question: How many keys does step see?\n"
    "      answer: {variant: sliding-window, stage: weights, tensor: keys_seen, cell: [step]}\n"
    "      explanation: 'It sees {{answer}}.'\n"
    "  - quiz:\n"
    "      question: How many pairs does the causal mask hide?\n"
    "      answer: {variant: masked, stage: mask, then: [count]}\n"
    "  - quiz:\n"
    "      question: Which token does Your attend to most?\n"
    "      answer: {variant: naive-loop, stage: scores, then: [{pick: Your}, argmax]}\n"
)


def test_count_answers_print_as_integers(host: PluginHost) -> None:
    runner = LessonRunner(load(COUNT_QUIZZES, host), host)
    seen, hidden, most = runner.lesson.quizzes
    # "step" is the sixth token: a window of 3 keys ends at it (the default window).
    assert runner.answer_text(seen) == "3"
    assert runner.text(seen.explanation, seen) == "It sees 3."
    assert runner.answer_text(hidden) == str(6 * 5 // 2)  # above the diagonal of 6 × 6
    scores = torch.tensor(seeds.SEED_003_INPUTS) @ torch.tensor(seeds.SEED_003_INPUTS).T
    assert runner.answer_text(most) == str(int(scores[0].argmax()))
    assert runner.is_right(seen, "3") and runner.is_right(seen, "3.0")
    # A weight stays a weight, with its four decimals.
    weight = quiz_app(host)
    assert weight.runner.answer_text(weight.quiz) == f"{seeds.SEED_003_DOT_0_1:.4f}"
    assert answer_text(number_quiz(), 2) == "2"
    # A float that came out whole (a sum of 0/1 flags) reads as the count it is.
    assert answer_text(number_quiz(), 2.0) == "2"
    assert answer_text(number_quiz(), -0.0) == "0"
    assert answer_text(number_quiz(), 2.5) == "2.5000"


async def test_the_widget_shows_a_count_as_an_integer(host: PluginHost) -> None:
    app = quiz_app(host, COUNT_QUIZZES.split("  - quiz:\n      question: How many pairs")[0])
    async with app.run_test() as pilot:
        await pilot.pause()
        app.query_one("#quiz-input").focus()
        await type_answer(pilot, "2")
        feedback = shown(app, "#quiz-feedback")
        assert "Not quite" in feedback and "It sees 3." in feedback
        assert "3.0000" not in feedback
