"""No quiz of a shipped lesson gives its answer away, on its own screen or on any other.

Every step of every shipped lesson is viewed through the session with no quiz answered
(a learner who skips each quiz with → and comes back) and with all but one answered.
Whatever the step shows (prose, a quiz's question, choices and hints, each table's
title, formula, range and every cell not hidden) must hold no number within a quiz's
tolerance of its answer while that quiz is unanswered, no hidden cell may be 1 minus the
shown rest of a row or column that adds up to 1, and the answer box's example (if any)
is no right answer; and no sentence states a quiz's answer in words before it is answered
(:mod:`tracer.lessons.statements`). The answers here are recomputed from the tables the variant produced
(``Resolved.tensor`` at the answer's cell), not taken from the walk that hides them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch

from tracer.lessons.hiding import Table, quiz_id
from tracer.lessons.loader import find_lessons, load_lesson
from tracer.lessons.model import Quiz, TensorRef
from tracer.lessons.statements import sentences, statement
from tracer.plugin_host import PluginHost
from tracer.session.lesson import (
    LessonSession,
    LessonView,
    LoopView,
    how_to_answer,
    start_session,
)
from tracer.session.moves import Moved
from tracer.tui.equation_text import equation_text

NUMBER = re.compile(r"(?<![\w.])[-−]?\d+[.,]\d+(?:e[-+]?\d+)?(?![\w]|[.,]\d)")
"""A number written with decimals (a whole number in prose is the lesson's setting:
"4 heads", "counting from 0"); titles are checked for whole numbers too."""
SUB_STEPS = 400
"""Sub-steps of a loop walked at most (the shipped lessons' longest has 36)."""
WHOLE = re.compile(r"(?<![\w.])[-−]?\d+(?:[.,]\d+)?(?![\w]|[.,]\d)")


@dataclass(frozen=True)
class Answer:
    id: str
    step: int
    value: float
    tolerance: float
    quiz: Quiz
    own_screen: bool = False
    """Looked for on its own quiz's screen, where nothing within its tolerance may show."""

    def near(self, value: float) -> bool:
        """Whether ``value`` shown would give this answer away."""
        if self.plain and not self.own_screen:
            return False  # a single digit elsewhere is no giveaway by itself: see own_cells
        return self.equal(value)

    def equal(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        shown = f"{value:.4f}" == f"{self.value:.4f}"
        return shown or abs(value - self.value) <= self.tolerance + 1e-9

    @property
    def plain(self) -> bool:
        """A single-digit whole number (a count, an index, a weight of 0 or 1): the screens
        show such numbers for reasons of their own (a block size, a mask's 0s), so it must
        be hidden where it is the answer, its own cell, not wherever it is equal."""
        whole = round(self.value)
        return abs(whole) <= 9 and abs(self.value - whole) <= max(self.tolerance, 1e-6)


def own_cells(table: Table, answer: Answer) -> list[tuple[int, int]]:
    """The answer's own cell where ``table`` is the tensor the quiz's answer names."""
    ref, shown = answer.quiz.answer, table.resolved.ref
    if not isinstance(ref, TensorRef) or ref.cell is None:
        return []
    first = next(iter(table.resolved.stage.tensors), None)
    named = (ref.variant, ref.stage, ref.tensor or first, ref.then, ref.query, ref.options)
    if named != (
        shown.variant,
        shown.stage,
        shown.tensor or first,
        shown.then,
        shown.query,
        shown.options,
    ):
        return []
    shape = tuple(table.resolved.tensor.shape)
    flat = 0
    for index, size in zip(ref.cell, shape, strict=True):
        flat = flat * size + index
    columns = shape[-1] if shape else 1
    return [(flat // columns, flat % columns)]


def answers(session: LessonSession) -> list[Answer]:
    """Every number quiz's answer: the value at its cell of the tensor the run produced."""
    found = []
    for number, step in enumerate(session.steps):
        if isinstance(step, Quiz) and step.quiz_kind == "number":
            value = float(session.runner.answer(step))  # type: ignore[arg-type]
            allowed = step.tolerance * abs(value) if step.relative else step.tolerance
            found.append(Answer(quiz_id(number, step), number, value, allowed, step))
    return found


@pytest.fixture(scope="module")
def sessions(host: PluginHost) -> list[LessonSession]:
    opened = []
    for ref in find_lessons(()):
        lesson = load_lesson(ref.path, host)
        session = start_session(lesson, host, ref.path)
        session.attach(None)
        opened.append(session)
    yield opened
    for session in opened:
        session.close()


def texts(view: LessonView) -> Iterator[tuple[str, str]]:
    """(where, text) for each piece of prose the step shows."""
    yield "text", view.step.text
    yield from (("point", point) for point in view.step.points)
    if view.quiz is not None:
        yield "question", view.quiz.question
        yield from (("choice", choice) for choice in view.quiz.choices)
        yield "how to answer", view.quiz.how
    yield from (("hint", hint) for hint in view.step.hints)


def shown_cells(table: Table) -> Iterator[tuple[tuple[int, int], float]]:
    tensor = table.resolved.tensor.detach().double()
    columns = int(tensor.shape[-1]) if tensor.dim() else 1
    for flat, value in enumerate(tensor.reshape(-1).tolist()):
        cell = (flat // columns, flat % columns)
        if cell not in table.hidden:
            yield cell, float(value)


def derivable(table: Table) -> list[tuple[int, int]]:
    return derivable_cells(table.resolved.tensor, table.hidden)


def derivable_cells(
    tensor: torch.Tensor, hidden: frozenset[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Hidden cells that are 1 minus the shown rest of a row or column adding up to 1."""
    tensor = tensor.detach().double()
    if tensor.dim() == 0:
        return []
    grid = tensor.reshape(-1, tensor.shape[-1]).tolist()
    lines = [[(r, c) for c in range(len(grid[0]))] for r in range(len(grid))]
    lines += [[(r, c) for r in range(len(grid))] for c in range(len(grid[0]))]
    found = []
    for line in lines:
        shut = [cell for cell in line if cell in hidden]
        values = [grid[r][c] for r, c in line]
        adds_to_one = all(v >= 0 for v in values) and abs(sum(values) - 1) <= 1e-4
        if len(line) > 1 and len(shut) == 1 and adds_to_one:
            found += shut
    return found


def one_operation_away(
    tensor: torch.Tensor, hidden: frozenset[tuple[int, int]], unanswered: list[Answer]
) -> list[str]:
    """Hidden answers that the shown cells of their row or column give by one operation: a
    constant step carried on from the next two shown cells (1.8300 + (1.8300 − 1.8250)), a
    step growing by a constant from the next three (22, 48, 78, 112, 150: the next is 192) or
    four, or the middle of the two cells beside it; along a line that only rises or only
    falls (a sequence, not a row of weights). numpy's polyfit is the oracle."""
    tensor = tensor.detach().double()
    if tensor.dim() == 0 or not hidden:
        return []
    grid = tensor.reshape(-1, tensor.shape[-1]).tolist()
    rows, columns = len(grid), len(grid[0])

    def shown(row: int, column: int) -> float | None:
        if not (0 <= row < rows and 0 <= column < columns) or (row, column) in hidden:
            return None
        value = grid[row][column]
        return value if math.isfinite(value) else None

    found = []
    for row, column in sorted(hidden):
        if not (0 <= row < rows and 0 <= column < columns):
            continue
        for answer in unanswered:
            if answer.plain or not answer.equal(grid[row][column]):
                continue
            for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                line = np.array(grid[row] if dr == 0 else [grid[r][column] for r in range(rows)])
                steps = np.diff(line)
                if len(line) < 3 or not ((steps > 0).all() or (steps < 0).all()):
                    continue  # only a sequence (rising or falling) is carried on
                k = 1
                while (row + k * dr, column + k * dc) in hidden:
                    k += 1
                if k > 2:  # carried on from further away, a line is a guess
                    continue
                beyond = [shown(row + (k + j) * dr, column + (k + j) * dc) for j in range(4)]
                a = beyond[0]
                c = shown(row - dr, column - dc) if k == 1 else None
                for degree in (1, 2, 3):
                    points = beyond[: degree + 1]
                    if any(p is None for p in points):
                        break
                    fit = np.polyfit([k + j for j in range(degree + 1)], points, degree)
                    if answer.equal(float(np.polyval(fit, 0))):
                        found.append(f"{(row, column)} is carried on from {points}: {answer.id}")
                if a is not None and c is not None and answer.equal((a + c) / 2):
                    found.append(f"{(row, column)} is the middle of its neighbours: {answer.id}")
    return found


def grid_cells(tensor: torch.Tensor) -> Iterator[tuple[tuple[int, int], float]]:
    """Each value of ``tensor`` with its cell as drawn (folded to two dimensions)."""
    tensor = tensor.detach().double()
    columns = int(tensor.shape[-1]) if tensor.dim() else 1
    for flat, value in enumerate(tensor.reshape(-1).tolist()):
        yield (flat // columns, flat % columns), float(value)


def loop_leaks(loop: LoopView, unanswered: list[Answer]) -> list[str]:
    """What a loop's sub-step shows: its tensors, the matrix filled so far, its formula, its
    written-out arithmetic and where it is in the loop."""
    said = loop.shown
    assert said is not None
    sub = loop.sub
    found = []
    for name, tensor in sub.tensors.items():
        hidden = said.hidden.get(name, frozenset())
        for cell, value in grid_cells(tensor):
            if cell not in hidden:
                found += [f"{name} {cell}: {a.id}" for a in unanswered if a.near(value)]
        if tensor.dim():
            found += [f"{name} {c} is 1 minus its row" for c in derivable_cells(tensor, hidden)]
            found += [f"{name} {leak}" for leak in one_operation_away(tensor, hidden, unanswered)]
    canvas = loop.canvas
    if canvas is not None:
        for row in range(canvas.rows):
            for column in range(canvas.cols):
                value = canvas.value(row, column, sub.index)
                if value is None or (row, column) in said.canvas_hidden:
                    continue
                found += [f"matrix {(row, column)}: {a.id}" for a in unanswered if a.near(value)]
    equation = equation_text(sub, numbers=said.arithmetic)
    written = f"{said.formula}\n{equation.plain if equation is not None else ''}"
    for match in NUMBER.finditer(written):
        value = float(match.group().replace("−", "-").replace(",", "."))
        found += [f"formula {written!r}: {a.id}" for a in unanswered if a.near(value)]
    _number, count = loop.place
    if count is not None:
        found += [f"the loop's length {count}: {a.id}" for a in unanswered if a.near(count)]
    return found


def leaks(view: LessonView, unanswered: list[Answer]) -> list[str]:
    found = []
    if view.loop is not None:
        found += loop_leaks(view.loop, unanswered)
    difference = view.step.difference
    if difference is not None:
        hidden = view.step.difference_hidden
        for cell, value in grid_cells(difference):
            if cell not in hidden:
                found += [f"difference {cell}: {a.id}" for a in unanswered if a.near(value)]
        for match in WHOLE.finditer(view.step.largest):
            value = float(match.group())
            found += [f"largest difference {value}: {a.id}" for a in unanswered if a.near(value)]
        for table in view.tables:  # the author's words: whole numbers are the lesson's own
            for match in NUMBER.finditer(table.label):
                value = float(match.group().replace("−", "-").replace(",", "."))
                found += [f"label {table.label!r}: {a.id}" for a in unanswered if a.near(value)]
    for where, text in texts(view):
        # Decimals, and whole numbers but a single digit (an author's setting: "4 heads").
        for match in WHOLE.finditer(text):
            value = float(match.group().replace("−", "-").replace(",", "."))
            decimal = NUMBER.fullmatch(match.group()) is not None
            found += [
                f"{where} {text!r}: {a.id}"
                for a in unanswered
                if a.near(value) and (decimal or abs(value) > 9)
            ]
    for table in view.tables:
        head = f"{table.title}\n{table.formula}"
        # A stage's title is the variant's (it may count what a quiz asks); a derived table's
        # is the lesson's operations ("row 1, then softmax"), checked for decimals only.
        for match in (NUMBER if table.derived else WHOLE).finditer(head):
            value = float(match.group().replace("−", "-").replace(",", "."))
            found += [f"title {head!r}: {a.id}" for a in unanswered if a.near(value)]
        for cell, value in shown_cells(table):
            found += [f"{table.name} {cell}: {a.id}" for a in unanswered if a.near(value)]
        for answer in unanswered:
            found += [
                f"{table.name} {cell}, the answer's own: {answer.id}"
                for cell in own_cells(table, answer)
                if cell not in table.hidden
            ]
        for end in table.legend or ():
            found += [f"{table.name} legend {end}: {a.id}" for a in unanswered if a.near(end)]
        found += [f"{table.name} {cell} is 1 minus its row" for cell in derivable(table)]
        found += [
            f"{table.name} {leak}"
            for leak in one_operation_away(table.resolved.tensor, table.hidden, unanswered)
        ]
    return found


def test_no_step_of_a_shipped_lesson_shows_an_unanswered_quizs_answer(
    sessions: list[LessonSession],
) -> None:
    """Nothing answered: every step, quizzes and the steps around them alike."""
    found = []
    for session in sessions:
        unanswered = answers(session)
        for number in range(len(session.steps)):
            session.go_to(number)
            for sub in range(SUB_STEPS):  # a loop's every sub-step, as → shows them
                try:
                    view = session.view()
                except Exception:  # a loop or a step the session reports as failing elsewhere
                    break
                where = f"{session.lesson.name} step {number + 1}.{sub + 1}"
                kept = [replace(a, own_screen=a.step == number) for a in unanswered]
                found += [f"{where}: {leak}" for leak in leaks(view, kept)]
                if view.loop is None or not isinstance(session.next(), Moved):
                    break
                if session.position.step != number:
                    break
    assert found == []


def test_each_quiz_alone_unanswered_keeps_its_answer_off_its_screen(
    sessions: list[LessonSession],
) -> None:
    """Every other quiz answered: only this quiz's answer is hidden, and it is."""
    found = []
    for session in sessions:
        every = answers(session)
        for answer in every:
            session.progress.answers.clear()
            for other in every:
                if other is not answer:
                    session.progress.answers[other.id] = _Right()  # type: ignore[assignment]
            session.go_to(answer.step)
            view = session.view()
            where = f"{session.lesson.name} step {answer.step + 1}"
            found += [
                f"{where}: {leak}" for leak in leaks(view, [replace(answer, own_screen=True)])
            ]
            quiz = view.quiz
            assert quiz is not None
            box = how_to_answer(quiz.quiz)
            found += [
                f"{where}: the answer box says {m.group()!r}"
                for m in WHOLE.finditer(box)
                if answer.near(float(m.group()))
            ]
        session.progress.answers.clear()
    assert found == []


@dataclass(frozen=True)
class _Right:
    response: str = "1"
    right: bool = True


def test_the_apps_answer_box_gives_no_example_number() -> None:
    """The app's answer box shows a placeholder; a number in it could be a right answer
    (0.95 for lesson 01's 0.9544 ± 0.005)."""
    from tracer.tui.quiz_view import PLACEHOLDERS

    assert all(not re.search(r"\d", text) for text in PLACEHOLDERS.values())


def test_no_sentence_states_a_quiz_alone_unanswered_in_words(
    sessions: list[LessonSession],
) -> None:
    """Each quiz alone unanswered (a learner who skipped it): no sentence of any step (before
    or after it, a checkpoint that sums up included), of its tables' titles, of another
    quiz's question, of its own hints, of the lesson's summary or of the end of the lesson
    states its right choice reworded or the number it asks for ("each row of dS sums to
    zero", "6 in all"); and no screen but its own holds its right choice word for word."""
    found = []
    for session in sessions:
        quizzes = [
            (number, step) for number, step in enumerate(session.steps) if isinstance(step, Quiz)
        ]
        for number, quiz in quizzes:
            said = statement(quiz, number, session.runner)
            right = _right_choice(session, quiz)
            if said is None and right is None:
                continue
            session.progress.answers.clear()
            for other_number, other in quizzes:
                if other is not quiz:
                    session.progress.answers[quiz_id(other_number, other)] = _Right()  # type: ignore[assignment]
            read = [("summary", session.intro())]
            for seen in range(len(session.steps)):
                session.go_to(seen)
                view = session.view()
                where = f"step {seen + 1}"
                pieces = [view.step.text, *view.step.points, *(t.title for t in view.tables)]
                pieces += [t.label for t in view.tables]
                if view.quiz is not None and seen != number:
                    pieces += [view.quiz.question, *view.step.hints]
                elif seen == number:
                    pieces += list(view.step.hints)
                read += [(where, piece) for piece in pieces]
            session.go_to(len(session.steps) - 1)
            read.append(("the end", session.summary()))
            if said is not None:
                found += [
                    f"{session.lesson.name} {where}: {sentence!r} states quiz "
                    f"{quiz_id(number, quiz)}"
                    for where, text in read
                    for sentence in sentences(text)
                    if said.stated_by(sentence)
                ]
            if right is not None:
                found += [
                    f"{session.lesson.name} {where}: {text!r} holds quiz "
                    f"{quiz_id(number, quiz)}'s right choice"
                    for where, text in read
                    if right in " ".join(text.lower().split())
                ]
        session.progress.answers.clear()
    assert found == []


def _right_choice(session: LessonSession, quiz: Quiz) -> str | None:
    """A choice quiz's right choice as written, when it is a claim (six words or more), not a
    name ("dividing by the sum" names a way the lesson shows)."""
    if quiz.quiz_kind != "choice":
        return None
    text = " ".join(quiz.choices[int(session.runner.answer(quiz))].lower().split())  # type: ignore[arg-type]
    return text if len(text.split()) >= 6 else None
