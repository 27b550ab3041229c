"""A hidden answer is not one operation away from what a screen shows (issue 43, item 1):
a row whose total is known, a difference of two shown cells, a shown cell times or divided
by a constant the lesson states; and no more is hidden than that takes.

The numbers are written here, with numpy checking the relation each case rests on, or
recomputed with numpy from the run's queries and keys (never read from the walk tested).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tracer.lessons.hiding import Secret, Table, Why, conceal, hidden_cells, hidden_legend
from tracer.lessons.lesson_runner import LessonRunner, Resolved
from tracer.lessons.loader import parse_lesson
from tracer.lessons.model import Quiz, TensorRef
from tracer.lessons.views import step_view
from tracer.plugin_host import PluginHost
from tracer.variant import Stage

QUIZ = Quiz(question="q", quiz_kind="number", answer=0.0)


def table(name: str, values: list[list[float]], title: str = "A table") -> Table:
    tensor = torch.tensor(values, dtype=torch.float64)
    ref = TensorRef("v", name)
    return Table(
        ref, Resolved(ref, name, tensor, (), None, Stage(name, title, {name: tensor})), "show"
    )


def lone_derivable(values: np.ndarray, hidden: frozenset[tuple[int, int]], total: float) -> bool:
    """Whether a row or column adding up to ``total`` holds exactly one hidden cell."""
    for lines in (values, values.T):
        for index, line in enumerate(lines):
            cells = [(index, c) if lines is values else (c, index) for c in range(len(line))]
            if abs(line.sum() - total) < 1e-9 and sum(c in hidden for c in cells) == 1:
                return True
    return False


def test_a_row_that_sums_to_zero_hides_one_more_cell_not_the_row() -> None:
    """Each row of dS sums to 0 (a lesson says so): with the answer hidden alone, 0 minus the
    rest would give it; one more hidden cell leaves only the sum of the two."""
    ds = np.array([[0.31, -0.12, -0.24, 0.05], [0.02, 0.5, -0.3, 0.7]])
    assert abs(ds[0].sum()) < 1e-12  # the relation the rule rests on
    hidden = hidden_cells(torch.tensor(ds), [Secret(0, QUIZ, 0.31, 0.005)])
    assert hidden == {(0, 0), (0, 1)}
    assert not lone_derivable(ds, hidden, 0.0)


def test_a_total_drawn_beside_its_parts_hides_one_more_part() -> None:
    """A row whose last cell is the sum of the others: a hidden part is the total less the
    shown rest, and a hidden total is the sum of the parts."""
    row = np.array([[0.2, 0.35, 0.1, 0.65]])
    assert abs(row[0, :3].sum() - row[0, 3]) < 1e-12
    part = hidden_cells(torch.tensor(row), [Secret(0, QUIZ, 0.35, 0.001)])
    assert part == {(0, 1), (0, 2)}
    total = hidden_cells(torch.tensor(row), [Secret(0, QUIZ, 0.65, 0.001)])
    assert total == {(0, 3), (0, 2)}


def test_a_row_whose_total_another_table_shows_hides_one_more() -> None:
    parts = [[0.42, 0.13, 0.27], [0.91, 0.47, 0.35]]
    totals = [[0.82, 1.73]]
    assert math.isclose(sum(parts[0]), totals[0][0])  # the second table holds the first's sum
    secret = Secret(0, QUIZ, 0.13, 0.001)
    shown, total = conceal([table("parts", parts), table("totals", totals)], [secret])
    assert shown.hidden == {(0, 1), (0, 2)}
    assert total.hidden == frozenset()
    # Without the second table the row's total is not known: the answer alone reads "?".
    (alone,) = conceal([table("parts", parts)], [secret])
    assert alone.hidden == {(0, 1)}


def test_a_difference_of_two_shown_cells_hides_one_of_them() -> None:
    before = [[1.8337, 1.2519]]
    after = [[1.4125, 0.6931]]
    answer = 1.8337 - 1.4125  # how far the first loss fell: one subtraction of shown numbers
    secret = Secret(3, QUIZ, answer, 0.005)
    left, right = conceal([table("before", before), table("after", after)], [secret])
    assert left.hidden | right.hidden == {(0, 0)} and right.hidden == {(0, 0)}
    assert Why("derives", 3) in right.why
    # A difference that comes near by chance (within the tolerance, not exactly) is no
    # derivation: nothing is hidden.
    near = Secret(3, QUIZ, answer + 0.004, 0.005)
    assert all(not t.hidden for t in conceal([table("b", before), table("a", after)], [near]))


def test_a_shown_cell_the_stated_scale_turns_into_the_answer_is_hidden() -> None:
    """The answer is a score divided by √d, d = 4 the table's width: the raw score is
    hidden (twice itself is no other shown number)."""
    scores = [[2.3311, 0.8123, 1.1057, 0.4391]]
    secret = Secret(0, QUIZ, 2.3311 / math.sqrt(4), 0.001)
    (shown,) = conceal([table("scores", scores, "Scores, before dividing by √d")], [secret])
    assert shown.hidden == {(0, 0)}
    assert shown.why == (Why("derives", 0),)
    # A single-digit whole answer (a count) is never worked out of the settings so.
    assert not conceal([table("scores", [[3.0, 6.0, 1.5]])], [Secret(0, QUIZ, 3.0, 0)])[0].hidden


def test_the_legend_says_why_each_cell_is_hidden() -> None:
    """A cell within the tolerance that is another quantity is said to be one, not the
    answer's cell."""
    values = [[0.4125, 0.9, 0.27]]
    (shown,) = conceal([table("t", values)], [Secret(6, QUIZ, 0.4120, 0.001)])
    assert shown.hidden == {(0, 0)}
    assert hidden_legend([shown]) == (
        "(? = hidden until the quiz at step 7 is answered: a number equal to its answer "
        "within its tolerance, read off it would be accepted)"
    )
    assert hidden_legend([table("t", values)]) == ""


SCALED = """title: T
summary: S
options: {seed: 123, init: rand, d_out: 2}
steps:
  - show: {variant: trainable, stage: scores}
  - narration: The scores are divided by √2, the square root of the width of a key.
  - quiz:
      question: What is the scaled score of journey with Your?
      answer: {variant: trainable, stage: scaled, cell: [journey, Your]}
      tolerance: 0.001
"""


def test_a_show_step_hides_the_score_the_quiz_scales(host: PluginHost) -> None:
    lesson = parse_lesson(SCALED, "l.yaml", host)
    runner = LessonRunner(lesson, host)
    ref = TensorRef("trainable", "queries", options=lesson.options)
    q = runner.tensor(ref).tensor.double().numpy()
    k = runner.tensor(TensorRef("trainable", "keys", options=lesson.options)).tensor.double()
    scores = q @ k.numpy().T
    answer = scores[1, 0] / math.sqrt(2)  # the oracle: the quiz's answer from numpy
    assert abs(float(runner.answer(lesson.steps[2])) - answer) < 1e-5  # type: ignore[arg-type,arg-type]
    (shown,) = step_view(lesson, runner, 0).tables
    assert (1, 0) in shown.hidden
    assert Why("derives", 2) in shown.why
    assert "step 3" in hidden_legend([shown])
    # Once the quiz is answered, the score shows.
    assert step_view(lesson, runner, 0, answered={"step-3"}).tables[0].hidden == frozenset()
    runner.close()


def test_a_quiz_keeps_on_its_own_screen_the_numbers_it_asks_to_work_from(
    host: PluginHost,
) -> None:
    """A quiz that shows the scores and asks for one divided by √2 asks for that division:
    the score it is worked out from stays on its own screen (its own cell still reads "?"
    where a table holds the answer itself)."""
    text = SCALED.replace(
        "      answer: {variant: trainable, stage: scaled, cell: [journey, Your]}",
        "      show: {variant: trainable, stage: scores}\n"
        "      answer: {variant: trainable, stage: scaled, cell: [journey, Your]}",
    )
    lesson = parse_lesson(text, "l.yaml", host)
    runner = LessonRunner(lesson, host)
    (own,) = step_view(lesson, runner, 2).tables
    assert own.name.startswith("scores") and (1, 0) not in own.hidden
    assert (1, 0) in step_view(lesson, runner, 0).tables[0].hidden  # before it, hidden
    runner.close()
