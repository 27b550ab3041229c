"""No quiz of a shipped lesson gives its answer away, on its own screen or on any other.

Every step of every shipped lesson is viewed through the session with no quiz answered
(a learner who skips each quiz with → and comes back) and with all but one answered.
Whatever the step shows (prose, a quiz's question, choices and hints, each table's
title, formula, range and every cell not hidden) must hold no number within a quiz's
tolerance of its answer while that quiz is unanswered, no hidden cell may be a known total
less the shown rest of its row or column (a row adding up to 1, one adding up to 0, a total
drawn beside its parts or shown elsewhere on the screen), no hidden answer may be a shown
cell times or divided by a constant the lesson states, or the difference of two shown cells
(but on its quiz's own screen, whose tables are what it asks to work from), no other screen
may show whole the row a computed choice is read off, and the answer box's example (if any)
is no right answer; and no sentence states a quiz's answer in words before it is answered
(:mod:`tracer.lessons.statements`). The answers here are recomputed from the tables the variant produced
(``Resolved.tensor`` at the answer's cell), not taken from the walk that hides them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
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


def screens(session: LessonSession, skip: int | None = None) -> Iterator[tuple[int, LessonView]]:
    """Each step's view but step ``skip``'s, as the session draws it; a step that fails to
    compute is left out (the session reports it as failing elsewhere)."""
    for seen in range(len(session.steps)):
        if seen == skip:
            continue
        session.go_to(seen)
        try:
            view = session.view()
        except Exception:
            continue
        yield seen, view


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


def derivable(table: Table, screen: list[float] | None = None) -> list[tuple[int, int]]:
    return derivable_cells(table.resolved.tensor, table.hidden, screen or [])


def derivable_cells(
    tensor: torch.Tensor, hidden: frozenset[tuple[int, int]], screen: list[float] | None = None
) -> list[tuple[int, int]]:
    """Hidden cells that are a known total less the shown rest of their row or column (the
    only hidden cell of it): a line of non-negative values adding up to 1, one of both signs
    adding up to 0, one whose cell is the sum of the others, or one whose total is a number
    ``screen`` shows. (A table of whole numbers: only a total beyond a single digit shown.)
    Sums by numpy, tighter than the walk's, so a near miss is not counted."""
    tensor = tensor.detach().double()
    if tensor.dim() == 0:
        return []
    grid = np.array(tensor.reshape(-1, tensor.shape[-1]).tolist())
    finite = grid[np.isfinite(grid)]
    whole = bool(np.all(finite == np.trunc(finite)))
    shown = np.sort(np.array(screen or [], dtype=float))
    lines = [[(r, c) for c in range(grid.shape[1])] for r in range(grid.shape[0])]
    lines += [[(r, c) for r in range(grid.shape[0])] for c in range(grid.shape[1])]
    found = []
    for line in lines:
        shut = [cell for cell in line if cell in hidden]
        values = np.array([grid[r][c] for r, c in line])
        if len(line) < 2 or len(shut) != 1 or not np.isfinite(values).all():
            continue
        total = float(values.sum())
        nonzero = int((values != 0).sum())

        def on_screen(within: float, total: float = total) -> bool:
            return bool(shown.size) and bool(np.min(np.abs(shown - total)) <= within)

        if whole:
            known = abs(total) > 9 and nonzero > 1 and on_screen(0.0)
        else:
            known = (
                ((values >= 0).all() and abs(total - 1) <= 1e-5)
                or (
                    (values > 0).any()
                    and (values < 0).any()
                    and abs(total) <= 1e-5 * max(1.0, float(np.abs(values).sum()))
                )
                or any(v != 0 and abs(total - 2 * v) <= 1e-5 * max(1.0, abs(v)) for v in values)
                or (nonzero > 1 and on_screen(1e-5 * max(1.0, abs(total))))
            )
        if known:
            found += shut
    return found


SCREEN_CELLS = 1024
"""Tables up to this size are read together, a screen at a time (as a learner reads them)."""


def screen_values(tables: tuple[Table, ...]) -> list[float]:
    """Every finite number the screen's tables (of at most SCREEN_CELLS cells) show."""
    found = []
    for table in tables:
        if table.resolved.tensor.numel() <= SCREEN_CELLS:
            found += [value for _cell, value in shown_cells(table) if math.isfinite(value)]
    return found


def number(written: str) -> float:
    """A number as written in prose: "−1.5", and "0,3" read as 0.3 (a decimal comma)."""
    return float(written.replace("−", "-").replace(",", "."))


def stated_numbers(session: LessonSession) -> set[float]:
    """Every number the lesson writes in words a learner reads before answering: its
    summary, narrations, captions, questions, choices, hints, checkpoints."""
    lesson = session.lesson
    texts = [lesson.summary]
    for step in lesson.steps:
        for name in ("text", "caption", "question", "title"):
            texts.append(str(getattr(step, name, "") or ""))
        for name in ("choices", "hints", "points"):
            texts += [str(text) for text in getattr(step, name, ())]
    return {number(m.group()) for t in texts for m in WHOLE.finditer(t)}


def screen_derivations(
    tables: tuple[Table, ...], unanswered: list[Answer], stated: set[float]
) -> list[str]:
    """Hidden answers that one operation on the numbers shown gives exactly: a shown cell
    times or divided by a constant written in the lesson or the tables' titles and formulas,
    a table's size, or the square root of one (the scale 1/√d); or the difference of two shown
    cells. Whole numbers (settings) and single-digit answers are left out, as the walk leaves
    them. numpy, to 5e-7: tighter than the walk's 1e-6, so only an exact derivation counts."""
    numbers = set(stated)
    for table in tables:
        stage = table.resolved.stage
        name = table.resolved.ref.tensor or ""
        words = f"{stage.title} {stage.formula_for(name) or ''}"
        numbers |= {number(m.group()) for m in WHOLE.finditer(words)}
        numbers |= {float(n) for n in table.resolved.tensor.shape}
    factors = sorted(
        {c for n in numbers if abs(n) not in (0.0, 1.0) for c in (abs(n), math.sqrt(abs(n)))}
    )
    shown: list[tuple[str, float]] = []
    for table in tables:
        if table.resolved.tensor.numel() > SCREEN_CELLS:
            continue
        shown += [
            (f"{table.name} {cell}", value)
            for cell, value in shown_cells(table)
            if math.isfinite(value) and value != math.trunc(value)
        ]
    if not shown:
        return []
    values = np.array([value for _where, value in shown])
    found = []
    for answer in unanswered:
        if answer.plain:
            continue
        for factor in factors:
            for worked, how in ((values * factor, "times"), (values / factor, "divided by")):
                close = np.abs(worked - answer.value) <= 5e-7 * np.maximum(np.abs(worked), 1)
                found += [
                    f"{shown[i][0]} {how} {factor:g} is {answer.id}" for i in np.nonzero(close)[0]
                ]
        differences = values[:, None] - values[None, :]
        scale = np.maximum(np.maximum(np.abs(values)[:, None], np.abs(values)[None, :]), 1)
        close = np.abs(differences - answer.value) <= 5e-7 * scale
        found += [
            f"{shown[i][0]} minus {shown[j][0]} is {answer.id}"
            for i, j in zip(*np.nonzero(close), strict=True)
            if i != j
        ]
    return found


def deciding_rows(session: LessonSession) -> list[tuple[str, int, np.ndarray]]:
    """(id, step, row) of each computed-choice quiz: the row its argmax or argmin reads."""
    found = []
    for number, step in enumerate(session.steps):
        ref = step.answer if isinstance(step, Quiz) else None
        if not isinstance(step, Quiz) or step.quiz_kind != "choice":
            continue
        if not isinstance(ref, TensorRef) or not ref.then:
            continue
        if ref.then[-1].name not in ("argmax", "argmin"):
            continue
        row = session.runner.tensor(replace(ref, then=ref.then[:-1], cell=None)).tensor
        if row.dim() == 1 and row.numel() > 1:
            found.append((quiz_id(number, step), number, row.detach().double().numpy()))
    return found


def rows_shown(table: Table, rows: list[tuple[str, int, np.ndarray]]) -> list[str]:
    """A deciding row the table shows whole, or with any cell of it not hidden."""
    tensor = table.resolved.tensor.detach()
    if tensor.dim() == 0 or not tensor.is_floating_point():
        return []
    grid = np.array(tensor.double().reshape(-1, tensor.shape[-1]).tolist())
    found = []
    for quiz, _step, row in rows:
        for lines, across in ((grid, True), (grid.T, False)):
            if lines.shape[1] != row.size:
                continue
            for index, line in enumerate(lines):
                if not np.allclose(line, row, rtol=1e-5, atol=1e-6):
                    continue
                cells = [(index, c) if across else (c, index) for c in range(row.size)]
                if not all(cell in table.hidden for cell in cells):
                    found.append(f"{table.name} shows the row quiz {quiz} is read off")
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


def leaks(
    view: LessonView,
    unanswered: list[Answer],
    stated: set[float] | None = None,
    rows: list[tuple[str, int, np.ndarray]] | None = None,
    picks: list[Picks] | None = None,
) -> list[str]:
    """What ``view`` gives away of the ``unanswered`` quizzes (and of the computed choices
    ``rows`` and the cells quizzes ``picks``, unanswered too, on every other screen);
    ``stated``: the numbers the lesson writes."""
    found = []
    screen = screen_values(view.tables)
    if view.quiz is None:  # a quiz's own tables are what it asks to work from
        found += screen_derivations(view.tables, unanswered, stated or set())
    # A computed choice's row is kept off every other screen while it is unanswered, those
    # after it too (a learner who skips it and comes back); so is a cells quiz's pattern.
    others = [row for row in rows or () if row[1] != view.position.step]
    for table in view.tables:
        found += rows_shown(table, others)
        found += pattern_shown(table.resolved.tensor, table.hidden, picks or (), view)
    if view.loop is not None:
        for quiz, _step, row in others:
            found += loop_row(view.loop, row, quiz)
    if view.loop is not None:
        found += loop_leaks(view.loop, unanswered)
    difference = view.step.difference
    if difference is not None:
        hidden = view.step.difference_hidden
        found += pattern_shown(difference, hidden, picks or (), view, "difference")
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
        found += [
            f"{table.name} {cell} is a known total less its row's rest"
            for cell in derivable(table, screen)
        ]
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
        stated, rows = stated_numbers(session), deciding_rows(session)
        picks = cells_answers(session)
        for number in range(len(session.steps)):
            session.go_to(number)
            for sub in range(SUB_STEPS):  # a loop's every sub-step, as → shows them
                try:
                    view = session.view()
                except Exception:  # a loop or a step the session reports as failing elsewhere
                    break
                where = f"{session.lesson.name} step {number + 1}.{sub + 1}"
                kept = [replace(a, own_screen=a.step == number) for a in unanswered]
                found += [f"{where}: {leak}" for leak in leaks(view, kept, stated, rows, picks)]
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
        stated = stated_numbers(session)
        for answer in every:
            session.progress.answers.clear()
            for other in every:
                if other is not answer:
                    session.progress.answers[other.id] = _Right()  # type: ignore[assignment]
            session.go_to(answer.step)
            view = session.view()
            where = f"{session.lesson.name} step {answer.step + 1}"
            alone = [replace(answer, own_screen=True)]
            found += [f"{where}: {leak}" for leak in leaks(view, alone, stated)]
            for seen, other in screens(session, skip=answer.step):  # one operation away
                found += [
                    f"{session.lesson.name} step {seen + 1}: {leak}"
                    for leak in leaks(other, [answer], stated)
                ]
            session.go_to(answer.step)
            view = session.view()
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


def loop_row(loop: LoopView, row: np.ndarray, quiz: str) -> list[str]:
    """A value of ``row`` the loop's sub-step shows (its tensors, or its matrix so far)."""
    said = loop.shown
    assert said is not None
    found = []
    for name, tensor in loop.sub.tensors.items():
        hidden = said.hidden.get(name, frozenset())
        for cell, value in grid_cells(tensor):
            if cell not in hidden and np.isclose(row, value, rtol=1e-5, atol=1e-6).any():
                found.append(f"{name} {cell} is of the row quiz {quiz} is read off")
    canvas = loop.canvas
    if canvas is not None and canvas.cols == row.size:
        for r in range(canvas.rows):
            written = [canvas.value(r, c, loop.sub.index) for c in range(canvas.cols)]
            cells = [c for c, v in enumerate(written) if v is not None and math.isfinite(v)]
            same = all(np.isclose(row[c], written[c], rtol=1e-5, atol=1e-6) for c in cells)
            shown = [c for c in cells if (r, c) not in said.canvas_hidden]
            if len(cells) >= 2 and same and shown:
                found.append(f"the loop's matrix row {r} is the row quiz {quiz} is read off")
    return found


def test_each_computed_choice_alone_unanswered_keeps_its_row_off_other_screens(
    sessions: list[LessonSession],
) -> None:
    """A choice quiz read off a row by argmax or argmin ("which key weighs most for
    journey?"), every other quiz answered: no other screen, before it or after it (a learner
    who skipped it), shows that row whole (or works it out in a loop, the values the loop
    shows)."""
    found, checked = [], 0
    for session in sessions:
        rows = deciding_rows(session)
        quizzes = [(n, s) for n, s in enumerate(session.steps) if isinstance(s, Quiz)]
        for quiz, number, row in rows:
            session.progress.answers.clear()
            for other_number, other in quizzes:
                if quiz_id(other_number, other) != quiz:
                    session.progress.answers[quiz_id(other_number, other)] = _Right()  # type: ignore[assignment]
            for seen in range(len(session.steps)):
                if seen == number:
                    continue
                session.go_to(seen)
                for sub in range(SUB_STEPS):  # a loop's every sub-step, as → shows them
                    try:
                        view = session.view()
                    except Exception:  # a step the session reports as failing elsewhere
                        break
                    checked += 1
                    where = f"{session.lesson.name} step {seen + 1}.{sub + 1}"
                    for table in view.tables:
                        found += [
                            f"{where}: {leak}" for leak in rows_shown(table, [(quiz, number, row)])
                        ]
                    if view.loop is not None:
                        found += [f"{where}: {leak}" for leak in loop_row(view.loop, row, quiz)]
                    if view.loop is None or not isinstance(session.next(), Moved):
                        break
                    if session.position.step != seen:
                        break
        session.progress.answers.clear()
    assert checked  # the shipped lessons ask computed choices
    assert found == []


@dataclass(frozen=True)
class Picks:
    """A cells quiz's answer: the cells it asks for, as drawn (two dimensions)."""

    id: str
    step: int
    picked: np.ndarray
    """True at each cell the quiz asks for."""
    name: tuple[object, ...]
    """The answer's own tensor: (variant, stage, tensor, then, query, options)."""


def cells_answers(session: LessonSession) -> list[Picks]:
    """Every cells quiz's answer, as the grader computes it (the cells a learner must
    select), not as the walk hides it."""
    found = []
    for number, step in enumerate(session.steps):
        if not isinstance(step, Quiz) or step.quiz_kind != "cells":
            continue
        answer = session.runner.answer(step)
        shape = tuple(answer.shape)  # type: ignore[union-attr]
        picked = np.zeros(shape if len(shape) == 2 else (1, shape[0]), dtype=bool)
        for cell in answer.cells:  # type: ignore[union-attr]
            picked[(0, *cell) if len(shape) == 1 else cell] = True
        ref = step.answer
        assert isinstance(ref, TensorRef)
        resolved = session.runner.tensor(ref)
        first = next(iter(resolved.stage.tensors), None)
        name = (ref.variant, ref.stage, ref.tensor or first, ref.then, ref.query, ref.options)
        found.append(Picks(quiz_id(number, step), number, picked, name))
    return found


def pattern_shown(
    tensor: torch.Tensor,
    hidden: frozenset[tuple[int, int]],
    picks: Iterable[Picks],
    view: LessonView,
    name: str = "",
) -> list[str]:
    """A cells quiz's answer that a table of another screen draws: any cell shown of the
    answer's own tensor, or of a table whose non-zero, zero or non-finite cells are the
    cells the quiz asks for (as they are, transposed, or once per block of leading axes)."""
    found: list[str] = []
    table = None if name else next((t for t in view.tables if t.resolved.tensor is tensor), None)
    tensor = tensor.detach()
    if tensor.dim() == 0 or not tensor.numel():
        return found
    grid = np.array(tensor.double().reshape(-1, tensor.shape[-1]).tolist())
    every = {(r, c) for r in range(grid.shape[0]) for c in range(grid.shape[1])}
    if every <= hidden:
        return found
    for pick in picks:
        if pick.step == view.position.step:
            continue  # its own screen: the table it is asked to select from
        if table is not None:
            shown = table.resolved.ref
            first = next(iter(table.resolved.stage.tensors), None)
            drawn = (shown.variant, shown.stage, shown.tensor or first)
            drawn += (shown.then, shown.query, shown.options)
            if drawn == pick.name:
                found.append(f"{table.name} is quiz {pick.id}'s answer, drawn")
                continue
        picked = pick.picked
        if picked.all() or not picked.any():
            continue  # no pattern: every table of the shape would match it
        finite = np.isfinite(grid)
        marks = (grid != 0, (grid == 0) & finite, ~finite)
        for wanted in (picked, picked.T):
            rows, columns = wanted.shape
            if grid.shape[1] != columns or grid.shape[0] % rows:
                continue
            blocks = np.tile(wanted, (grid.shape[0] // rows, 1))
            if any(np.array_equal(mark, blocks) for mark in marks):
                what = name or (table.name if table is not None else "a table")
                found.append(f"{what} draws the cells quiz {pick.id} asks for")
                break
    return found


def test_each_cells_quiz_alone_unanswered_keeps_its_cells_off_other_screens(
    sessions: list[LessonSession],
) -> None:
    """A cells quiz ("which cells will the causal mask hide?"), every other quiz answered:
    no other screen, before it or after it (a learner who skipped it and comes back), draws
    its answer's tensor or a table whose pattern is its cells (the mask, weights zeroed
    there, scores set to -inf there); answered, the mask is drawn again."""
    found, checked, drawn = [], 0, 0
    for session in sessions:
        picks = cells_answers(session)
        quizzes = [(n, s) for n, s in enumerate(session.steps) if isinstance(s, Quiz)]
        for pick in picks:
            session.progress.answers.clear()
            for other_number, other in quizzes:
                if quiz_id(other_number, other) != pick.id:
                    session.progress.answers[quiz_id(other_number, other)] = _Right()  # type: ignore[assignment]
            for seen, view in screens(session, skip=pick.step):
                checked += 1
                where = f"{session.lesson.name} step {seen + 1}"
                for table in view.tables:
                    leaked = pattern_shown(table.resolved.tensor, table.hidden, [pick], view)
                    found += [f"{where}: {leak}" for leak in leaked]
                difference = view.step.difference
                if difference is not None:
                    hidden = view.step.difference_hidden
                    leaked = pattern_shown(difference, hidden, [pick], view, "difference")
                    found += [f"{where}: {leak}" for leak in leaked]
            session.progress.answers[pick.id] = _Right()  # type: ignore[assignment]
            for _seen, view in screens(session):  # answered: everything shows as before
                drawn += sum(
                    bool(pattern_shown(t.resolved.tensor, frozenset(), [pick], view))
                    and not t.hidden
                    for t in view.tables
                )
        session.progress.answers.clear()
    assert checked and drawn  # lessons 05 and 15 ask cells quizzes, and draw their answer
    assert found == []
