"""Grids: labels from tokens, ranges that skip inf, ranks above two, and a loop half filled."""

from __future__ import annotations

import math

import torch

from tracer.tui.grid import CanvasGrid, Highlight, TensorGrid
from tracer.tui.stepper import LoopCanvas

TOKENS = ("Your", "journey", "starts")


def test_token_labels_and_shape() -> None:
    grid = TensorGrid("scores", torch.ones(3, 2), TOKENS)
    assert list(grid.row_labels) == list(TOKENS)
    assert list(grid.column_labels) == ["0", "1"]
    assert grid.shape == "3×2"
    assert grid.row(1, 0, 2) == [1.0, 1.0]


def test_a_focused_query_row_is_labelled_with_its_token() -> None:
    grid = TensorGrid("weights", torch.tensor([0.2, 0.5, 0.3]), TOKENS, query=1)
    assert list(grid.row_labels) == ["journey"]
    assert list(grid.column_labels) == list(TOKENS)


def test_the_heatmap_range_ignores_minus_infinity() -> None:
    masked = torch.tensor([[0.5, -math.inf], [0.25, 2.0]])
    grid = TensorGrid("masked", masked, ("a", "b"))
    assert (grid.low, grid.high, grid.has_non_finite()) == (0.25, 2.0, True)
    assert grid.number_width() == len("0.2500")
    wide = TensorGrid("big", torch.tensor([-123.5, 1.0]), ("a", "b"))
    assert wide.number_width() == len("-123.5000")


def test_rank_three_folds_leading_axes_into_rows() -> None:
    grid = TensorGrid("heads", torch.arange(12.0).reshape(2, 2, 3), ("a", "b"))
    assert list(grid.row_labels) == ["0·a", "0·b", "1·a", "1·b"]
    assert grid.row(3, 1, 3) == [10.0, 11.0]


def test_a_canvas_grid_shows_only_cells_written_so_far() -> None:
    canvas = LoopCanvas("scores", 2, 2)
    for index, (r, c) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        canvas.record(r, c, index, float(10 * r + c))
    grid = CanvasGrid("scores", canvas, 1, ("a", "b"), Highlight(current=(0, 1)))
    assert grid.row(0, 0, 2) == [0.0, 1.0]
    assert grid.row(1, 0, 2) == [None, None]
    assert (grid.low, grid.high) == (0.0, 11.0)  # the scale does not jump as the loop fills
