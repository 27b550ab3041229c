"""A hidden answer that its shown neighbours give by one operation is hidden with them
(:func:`tracer.lessons.hiding.hidden_cells`): lesson 11's losses and lesson 09's running
totals, as issue 43 found them."""

from __future__ import annotations

import torch

from tracer.lessons.hiding import Secret, hidden_cells
from tracer.lessons.model import Quiz

QUIZ = Quiz(question="q", quiz_kind="number", answer=0.0)


def test_a_loss_one_step_on_from_its_shown_neighbours_is_not_left_to_add() -> None:
    losses = torch.tensor([1.8338, 1.8300, 1.8250, 1.8214, 1.8185])
    hidden = hidden_cells(losses, [Secret(0, QUIZ, 1.8338, 0.005)])
    # 1.8300 is itself a right answer; 1.8250 + 2 · (1.8250 − 1.8214) = 1.8322 is one too.
    assert hidden == {(0, 0), (0, 1), (0, 2)}
    shown = [float(v) for c, v in enumerate(losses.tolist()) if (0, c) not in hidden]
    carried = 2 * shown[0] - shown[1]
    assert abs(carried - 1.8338) > 0.005  # what is left gives no right answer by a step


def test_a_running_total_with_a_constant_step_is_not_one_addition_away() -> None:
    totals = torch.tensor([[96.0, 192.0, 288.0, 384.0, 480.0]])
    hidden = hidden_cells(totals, [Secret(0, QUIZ, 192.0, 0.0)])
    assert (0, 1) in hidden
    assert (0, 2) in hidden  # 288 − (384 − 288) = 192, and 96 and 288 have 192 in the middle


def test_a_sequence_that_gives_nothing_away_stays_shown() -> None:
    values = torch.tensor([0.5, 0.9, 0.1, 0.7])
    assert hidden_cells(values, [Secret(0, QUIZ, 0.9, 0.005)]) == {(0, 1)}


def test_a_total_whose_steps_grow_by_a_constant_is_not_one_addition_away() -> None:
    """Lesson 09's cached work: 22, 48, 78, 112, 150 grow by 26, 30, 34, 38, so the caption's
    "each step costs a little more" gives 150 + 42 = 192; and 112 gives it one level deeper."""
    totals = torch.tensor([[22.0, 48.0, 78.0, 112.0, 150.0, 192.0]])
    hidden = hidden_cells(totals, [Secret(0, QUIZ, 192.0, 0.0)])
    assert hidden == {(0, 3), (0, 4), (0, 5)}


def test_a_row_that_is_no_sequence_is_not_carried_on() -> None:
    """0.15 is the middle of 0.155 and 0.145, but the row rises and falls (0.30, 0.10): it is
    no sequence a learner carries on, and its neighbours stay shown."""
    values = torch.tensor([[0.155, 0.15, 0.145, 0.30, 0.10]])  # not adding up to 1
    assert hidden_cells(values, [Secret(0, QUIZ, 0.15, 0.001)]) == {(0, 1)}
    rising = torch.tensor([[0.145, 0.15, 0.155, 0.30, 0.40]])  # a sequence: the middle hides
    assert (0, 2) in hidden_cells(rising, [Secret(0, QUIZ, 0.15, 0.001)])
