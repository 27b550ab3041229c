"""The lesson session without any front end: moves, loops, quizzes, hints and progress.

Reference numbers are computed here from the lesson's own inputs with numpy (the dot
products of the Basic Self Attention notebook's embeddings), never read from our output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tracer.lessons.loader import load_lesson, resolve_lesson
from tracer.lessons.model import Lesson, Loop, Quiz
from tracer.plugin_host import PluginHost
from tracer.session.lesson import LessonSession, Position, open_lesson, reopen, start_session
from tracer.session.moves import AtEnd, Cancelled, Failed, Moved, Refused, Waiting, settle
from tracer.session.progress import ProgressStore, progress_summary

from .answers import right_response, wrong_response

NAME = "dot_products"


@pytest.fixture(scope="module")
def lesson(host: PluginHost) -> tuple[Lesson, Path]:
    path = resolve_lesson(NAME)
    return load_lesson(path, host), path


@pytest.fixture
def session(lesson: tuple[Lesson, Path], host: PluginHost) -> LessonSession:
    opened = start_session(lesson[0], host, lesson[1])
    opened.attach(ProgressStore())
    return opened


def first(session: LessonSession, kind: type[object]) -> int:
    return next(n for n, step in enumerate(session.steps) if isinstance(step, kind))


def embeddings(session: LessonSession) -> np.ndarray:
    return np.array(session.lesson.inputs.embeddings, dtype=float)


def test_a_loop_is_walked_one_sub_step_at_a_time_and_back(session: LessonSession) -> None:
    number = first(session, Loop)
    loop = session.steps[number]
    assert isinstance(loop, Loop) and loop.query is not None
    tokens = session.lesson.inputs.tokens
    assert session.go(Position(number))
    assert session.count_loop(number) == len(tokens)  # one dot product per key
    for sub in range(1, len(tokens)):
        assert isinstance(session.next(), Moved)
        assert session.position == Position(number, sub)
    view = session.view()
    assert view.loop is not None and view.loop.number == len(tokens) - 1
    assert view.loop.sub.position == (loop.query, len(tokens) - 1)
    inputs = embeddings(session)
    expected = inputs[loop.query] @ inputs[len(tokens) - 1]
    assert float(view.loop.sub.tensors["score"]) == pytest.approx(expected, abs=1e-6)
    assert isinstance(session.next(), Moved)  # past the loop's end: the step after it
    assert session.position == Position(number + 1)
    assert session.back()  # back into the loop: at its last sub-step
    assert session.position == Position(number, len(tokens) - 1)


def test_a_loops_code_on_entering_is_known_ahead_only_when_held(session: LessonSession) -> None:
    """What a loop step shows on entering it (its first sub-step from before, its last coming
    back) is told ahead, without running the variant: nothing before its stepper holds it."""
    number = first(session, Loop)
    assert session.loop_code(number - 1, from_before=True) is None  # no loop there
    assert session.loop_code(number, from_before=True) is None  # not started: would run it
    session.go(Position(number))
    entered = session.view().loop
    assert entered is not None
    told = session.loop_code(number, from_before=True)
    assert told == (entered.sub.source_file, tuple(entered.sub.lines))
    assert session.loop_end()
    last = session.view().loop
    assert last is not None and last.sub.lines != entered.sub.lines
    assert session.loop_code(number, from_before=False) == (last.sub.source_file, last.sub.lines)


def test_a_loop_step_is_viewed_ahead_as_moving_onto_it_shows_it(session: LessonSession) -> None:
    """The view of a loop step told ahead (to draw it while the learner reads the step beside
    it) is the view moving onto it gives: its first sub-step from before, its last coming
    back; nothing before its stepper holds that sub-step."""
    number = first(session, Loop)
    assert session.loop_view_ahead(number - 1, from_before=True) is None  # no loop there
    assert session.loop_view_ahead(number, from_before=True) is None  # not started: would run it
    session.go(Position(number - 1))
    assert isinstance(session.next(), Moved)
    entered = session.view().loop
    ahead = session.loop_view_ahead(number, from_before=True)
    assert entered is not None and ahead is not None
    assert (ahead.sub, ahead.number, ahead.count, ahead.shown) == (
        entered.sub, entered.number, entered.count, entered.shown
    )  # fmt: skip
    assert session.loop_end()
    assert isinstance(session.next(), Moved)
    behind = session.loop_view_ahead(number, from_before=False)
    assert isinstance(session.back(), Moved)
    last = session.view().loop
    assert last is not None and behind is not None and last.number > 0
    assert (behind.sub, behind.number, behind.count) == (last.sub, last.number, last.count)


def test_loop_end_and_jumps(session: LessonSession) -> None:
    number = first(session, Loop)
    session.go(Position(number))
    assert session.loop_end()
    assert session.position.sub == len(session.lesson.inputs.tokens) - 1
    assert not session.go(Position(len(session.steps)))  # no such step: stays
    assert session.position.step == number
    assert session.go(Position(0)) and not session.back()  # nothing before the first step


def test_a_response_that_is_no_answer_reveals_and_records_nothing(session: LessonSession) -> None:
    number = first(session, Quiz)
    session.go(Position(number))
    verdict = session.answer("about a third")
    assert verdict.right is None and "not a number" in verdict.message
    assert verdict.answer == "" and verdict.explanation == ""
    assert session.progress.answers == {}
    view = session.view()
    assert view.quiz is not None and view.quiz.verdict is None


def test_a_number_quiz_is_graded_against_the_dot_product(session: LessonSession) -> None:
    number = first(session, Quiz)
    quiz = session.steps[number]
    assert isinstance(quiz, Quiz) and quiz.quiz_kind == "number"
    session.go(Position(number))
    inputs = embeddings(session)
    tokens = session.lesson.inputs.tokens
    expected = inputs[tokens.index("Your")] @ inputs[tokens.index("journey")]
    before = session.view()
    assert before.quiz is not None
    shown = f"{expected:.4f}"
    said = [before.quiz.question, before.quiz.how, *before.quiz.choices, *before.quiz.hints]
    assert not any(shown in text for text in said)  # the answer is not on screen yet
    verdict = session.answer(f"{expected:.3f}")
    assert verdict.right is True and shown in verdict.answer
    assert verdict.line.startswith("Right")
    again = session.answer("12")  # one answer counts: the first stays
    assert again.right is True and again.response == f"{expected:.3f}"
    saved = ProgressStore().get(session.key)
    assert saved is not None
    assert [(a.response, a.right) for a in saved.answers.values()] == [(f"{expected:.3f}", True)]


def test_a_wrong_choice_says_the_right_one(session: LessonSession) -> None:
    number = next(
        n
        for n, step in enumerate(session.steps)
        if isinstance(step, Quiz) and step.quiz_kind == "choice"
    )
    quiz = session.steps[number]
    assert isinstance(quiz, Quiz)
    session.go(Position(number))
    verdict = session.answer(wrong_response(session, quiz))
    assert verdict.right is False
    right = right_response(session, quiz)  # a letter
    assert verdict.answer.startswith(f"{right}) ")
    assert "you answered" in verdict.line and verdict.explanation
    view = session.view()
    assert view.quiz is not None and view.quiz.verdict == verdict


def test_hints_come_one_at_a_time(host: PluginHost) -> None:
    path = resolve_lesson("causal_masking")  # a lesson whose quizzes have hints
    session = start_session(load_lesson(path, host), host, path)
    number, quiz = next(
        (n, step) for n, step in enumerate(session.steps) if isinstance(step, Quiz) and step.hints
    )
    session.go(Position(number))
    given = []
    while (hint := session.hint()) is not None:
        given.append(hint)
        view = session.view()
        assert view.quiz is not None and view.quiz.hints == tuple(given)
    assert len(given) == len(quiz.hints)


def test_progress_is_saved_resumed_and_finished(
    session: LessonSession, lesson: tuple[Lesson, Path], host: PluginHost
) -> None:
    session.go(Position(2))
    assert session.save() is None
    resumed = start_session(lesson[0], host, lesson[1])
    resumed.attach(ProgressStore())
    assert resumed.position == Position(2)
    assert resumed.progress.seen == 3
    resumed.go(Position(len(resumed.steps) - 1))
    assert isinstance(resumed.next(), AtEnd)
    summary = progress_summary(ProgressStore().get(resumed.key))
    assert summary["done"] is True and summary["seen"] == len(resumed.steps)
    quizzes = sum(isinstance(step, Quiz) for step in resumed.steps)
    assert f"0 of {quizzes} right" in resumed.summary()
    assert resumed.next_lesson() is not None


def test_a_reloaded_lesson_keeps_the_place_and_the_answers(session: LessonSession) -> None:
    number = first(session, Quiz)
    session.go(Position(number))
    session.answer(right_response(session, session.steps[number]))  # type: ignore[arg-type]
    again = reopen(session)
    assert again.position == session.position
    assert again.recorded() is not None and again.recorded() == session.recorded()
    again.close()


def test_moves_return_typed_results(session: LessonSession) -> None:
    number = first(session, Loop)
    moved = session.go(Position(number))
    assert isinstance(moved, Moved) and moved
    nowhere = session.go(Position(len(session.steps)))
    assert isinstance(nowhere, AtEnd) and not nowhere and session.position.step == number
    session.go(Position(0))
    refused = session.loop_end()  # a narration is no loop: said in words, nothing moves
    assert isinstance(refused, Refused) and refused.reason == "This step is not a loop"
    assert session.position == Position(0)
    assert isinstance(session.back(), AtEnd)


def test_a_loops_next_sub_step_waits_on_pending_work(session: LessonSession) -> None:
    number = first(session, Loop)
    session.go(Position(number))
    move = session.next(wait=False)  # the loop's second sub-step is not computed yet
    assert isinstance(move, Waiting) and move.pending.description == "Running the loop"
    assert session.position == Position(number, 0)  # nothing moves before the work is done
    move.pending.run()
    done = move.pending.finish()
    assert isinstance(done, Moved) and session.position == Position(number, 1)
    assert isinstance(session.back(wait=False), Moved)  # at hand: no waiting
    end = session.loop_end(wait=False)  # finding a loop's end always runs in a worker
    assert isinstance(end, Waiting) and end.pending.description == "Running to the end of the loop"
    assert isinstance(settle(end), Moved)
    assert session.position == Position(number, len(session.lesson.inputs.tokens) - 1)


def test_cancelled_pending_work_moves_nothing(session: LessonSession) -> None:
    number = first(session, Loop)
    session.go(Position(number))
    move = session.next(wait=False)
    assert isinstance(move, Waiting)
    move.pending.cancel()
    with pytest.raises(Cancelled):
        move.pending.run()
    assert session.position == Position(number, 0)
    again = session.next(wait=False)  # asked again, the same work waits again
    assert isinstance(again, Waiting)
    assert isinstance(settle(again), Moved) and session.position == Position(number, 1)


FAILING_LOOP = """\
title: A loop that breaks
summary: Its variant raises after two sub-steps.
steps:
  - loop: {variant: fails-in-loop, stage: scores}
  - narration: Still here.
"""


def test_a_loop_that_fails_stays_says_why_and_the_lesson_goes_on(tmp_path: Path) -> None:
    lesson = tmp_path / "loop.yaml"
    lesson.write_text(FAILING_LOOP, encoding="utf-8")
    plugins = Path(__file__).resolve().parents[1] / "tui" / "plugins"
    session = open_lesson(lesson, plugin_dirs=[str(plugins)], warm=False)
    try:
        session.attach(None)
        assert isinstance(session.go_to(0), Moved)  # the loop starts where it is shown
        assert isinstance(session.next(), Moved) and session.position == Position(0, 1)
        failed = session.next()  # the third sub-step never comes
        assert isinstance(failed, Failed) and not failed
        assert "the loop broke after two sub-steps" in str(failed.error)
        assert session.position == Position(0, 1)
        assert isinstance(session.back(), Moved) and session.position == Position(0, 0)
        assert session.go_to(1) and session.position == Position(1)  # the lesson goes on
        assert isinstance(session.next(), AtEnd)
    finally:
        session.close()


def test_a_loop_with_a_limit_ends_at_it_and_back_comes_into_its_last_sub_step() -> None:
    """The app's test lesson: step 3 loops over the first query's keys, limited to eight."""
    plugins = Path(__file__).resolve().parents[1] / "tui" / "plugins"
    lesson = Path(__file__).resolve().parents[1] / "tui" / "lessons" / "tui_lesson.yaml"
    session = open_lesson(lesson, plugin_dirs=[str(plugins)], warm=False)
    try:
        session.attach(None)
        session.go_to(2)
        assert isinstance(session.next(), Moved) and isinstance(session.next(), Moved)
        assert session.position == Position(2, 2)
        assert isinstance(session.loop_end(), Moved)  # its eighth sub-step (limit: 8)
        assert session.position == Position(2, 7)
        assert isinstance(session.next(), Moved) and session.position == Position(3, 0)
        assert isinstance(session.back(), Moved)  # back into the loop, at its last sub-step
        assert session.position == Position(2, 7)
    finally:
        session.close()


def test_warming_up_prepares_every_source_file_a_step_shows(
    tmp_path: Path, host: PluginHost
) -> None:
    # A quiz can be the first step to show a file: its source is highlighted while the lesson
    # loads, not when the learner reaches it (a first highlight costs tens of milliseconds).
    path = tmp_path / "quiz_first.yaml"
    path.write_text(
        "title: Quiz first\n"
        "summary: A quiz shows the only table.\n"
        "steps:\n"
        "  - narration: Start.\n"
        "  - quiz:\n"
        "      question: How many tokens are there?\n"
        "      show: {variant: trainable, stage: queries}\n"
        "      answer: 6\n",
        encoding="utf-8",
    )
    prepared: list[str] = []
    opened = open_lesson(path, host=host, highlight=prepared.append)
    try:
        assert [Path(p).name for p in prepared] == ["trainable.py"]
    finally:
        opened.close()


def test_views_computed_ahead_follow_the_answers(session: LessonSession) -> None:
    """A step's view computed ahead (``prepare_nearby``, once the step before is drawn) is the
    one shown; once a quiz is answered, a step shows what it may show then, never the view
    kept from before the answer (which hid it)."""
    from tracer.lessons.views import StepView, quiz_id, step_view

    lesson, runner = session.lesson, session.runner

    def said(view: StepView) -> str:
        return repr([view.text, view.points, [sorted(table.hidden) for table in view.tables]])

    # A quiz, and a later step that shows more once it is answered (it hid the answer before).
    number, later = next(
        (number, later)
        for number, quiz in enumerate(session.steps)
        if isinstance(quiz, Quiz)
        for later in range(number + 1, len(session.steps))
        if said(step_view(lesson, runner, later, frozenset()))
        != said(step_view(lesson, runner, later, {quiz_id(number, quiz)}))
    )
    quiz = session.steps[number]
    assert isinstance(quiz, Quiz)
    session.go(Position(number - 1))
    session.prepare_nearby()
    prepared = session.step_views[number, frozenset()]
    session.go(Position(number))
    assert session.view().step is prepared  # the view computed ahead is the one shown
    hidden = session.step_view(later)  # computed ahead, before the answer
    session.answer(right_response(session, quiz))
    session.go(Position(later))
    shown = session.view().step
    assert said(shown) == said(step_view(lesson, runner, later, {quiz_id(number, quiz)}))
    assert said(shown) != said(hidden)
