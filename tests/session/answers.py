"""The right response to a quiz, typed as a learner would, from the answer the run computes."""

from __future__ import annotations

from tracer.lessons.grading import CellAnswer
from tracer.lessons.model import Quiz
from tracer.session.lesson import LessonSession


def right_response(session: LessonSession, quiz: Quiz) -> str:
    """What a learner who worked it out types: the number, the choice's letter, every right
    choice's number, or every right cell as ``row,column`` indices."""
    answer = session.runner.answer(quiz)
    if isinstance(answer, CellAnswer):
        return "; ".join(",".join(str(i) for i in cell) for cell in sorted(answer.cells))
    if quiz.quiz_kind == "choice":
        assert isinstance(answer, int)
        return chr(ord("a") + answer)
    if quiz.quiz_kind == "multiple":
        assert isinstance(answer, tuple)
        return " ".join(str(i + 1) for i in answer)
    assert isinstance(answer, (int, float))
    return repr(float(answer))


def wrong_response(session: LessonSession, quiz: Quiz) -> str:
    """A response that is an answer, but not the right one."""
    answer = session.runner.answer(quiz)
    if quiz.quiz_kind == "choice":
        assert isinstance(answer, int)
        return chr(ord("a") + (answer + 1) % len(quiz.choices))
    assert isinstance(answer, (int, float))
    return repr(float(answer) + 1000 * (quiz.tolerance + 1))
