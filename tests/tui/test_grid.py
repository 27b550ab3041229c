"""Grids: labels from tokens, ranges that skip inf, ranks above two, and a loop half filled."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tracer.tracing.stepper import LoopCanvas
from tracer.tui.grid import CanvasGrid, Highlight, TensorGrid

TOKENS = ("Your", "journey", "starts")


def test_token_labels_and_shape() -> None:
    grid = TensorGrid("scores", torch.ones(3, 2), TOKENS, axes=("token", "feature"))
    assert list(grid.row_labels) == list(TOKENS)
    assert list(grid.column_labels) == ["0", "1"]
    assert grid.shape == "3×2"
    assert grid.row(1, 0, 2) == [1.0, 1.0]


def test_axes_the_variant_did_not_name_get_indices_never_tokens() -> None:
    # Three rows and three tokens: a guess would label them with the tokens. It must not.
    grid = TensorGrid("w", torch.ones(3, 3), TOKENS)
    assert list(grid.row_labels) == ["0", "1", "2"]
    assert list(grid.column_labels) == ["0", "1", "2"]


def test_a_focused_query_row_is_labelled_with_its_token() -> None:
    grid = TensorGrid("weights", torch.tensor([0.2, 0.5, 0.3]), TOKENS, query=1, axes=("key",))
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
    grid = TensorGrid(
        "heads", torch.arange(12.0).reshape(2, 2, 3), ("a", "b"), axes=("head", "query", "feature")
    )
    assert list(grid.row_labels) == ["head 0·a", "head 0·b", "head 1·a", "head 1·b"]
    assert grid.row(3, 1, 3) == [10.0, 11.0]


def test_a_canvas_grid_shows_only_cells_written_so_far() -> None:
    canvas = LoopCanvas("scores", 2, 2)
    for index, (r, c) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        canvas.record(r, c, index, float(10 * r + c))
    grid = CanvasGrid("scores", canvas, 1, ("a", "b"), Highlight(current=(0, 1)))
    assert grid.row(0, 0, 2) == [0.0, 1.0]
    assert grid.row(1, 0, 2) == [None, None]
    assert (grid.low, grid.high) == (0.0, 11.0)  # the scale does not jump as the loop fills


def test_the_overview_is_the_mean_of_each_block_leaving_out_infinities() -> None:
    data = np.arange(64.0).reshape(8, 8)
    data[0, 0] = -np.inf  # a mask's -inf is not part of any mean
    grid = TensorGrid("big", torch.tensor(data), (), axes=None)
    blocks = grid.overview(2, 4)
    assert len(blocks) == 2 and all(len(row) == 4 for row in blocks)
    for r in range(2):
        for c in range(4):
            block = data[4 * r : 4 * r + 4, 2 * c : 2 * c + 2]
            expected = block[np.isfinite(block)].mean()
            assert blocks[r][c] == pytest.approx(expected)


def test_an_overview_of_a_4096_token_table_has_one_value_per_screen_cell() -> None:
    data = torch.rand(4096, 4096, generator=torch.Generator().manual_seed(4096))
    grid = TensorGrid("big", data, ())
    blocks = grid.overview(80, 150)
    assert (len(blocks), len(blocks[0])) == (80, 150)
    # 4,096 rows into 80 blocks of 51.2: the first covers rows 0-51; columns 0-27 likewise.
    expected = data[:52, :28].double().mean()
    # The grid sums in float32 (1,456 values: about 1e-6 off); a neighbouring block is ~1e-2 off.
    assert blocks[0][0] == pytest.approx(float(expected), rel=1e-5)
    assert blocks[0][1] != pytest.approx(float(expected), rel=1e-5)


def test_a_loop_canvas_overview_leaves_unwritten_cells_out() -> None:
    canvas = LoopCanvas("scores", 2, 2)
    canvas.record(0, 0, 0, 1.0)
    canvas.record(0, 1, 1, 3.0)
    canvas.record(1, 0, 2, 100.0)
    grid = CanvasGrid("scores", canvas, 1, ("a", "b"), Highlight())
    assert grid.overview(1, 1) == [[2.0]]  # sub-step 2 had not run yet


def test_weights_are_rows_over_key_tokens_that_sum_to_one() -> None:
    weights = torch.softmax(torch.randn(3, 3), dim=-1)
    assert TensorGrid("w", weights, TOKENS, axes=("query", "key")).is_weights()
    assert not TensorGrid("w", weights, TOKENS).is_weights()  # axes not named: unknown
    scores = torch.randn(3, 3) + 5
    assert not TensorGrid("s", scores, TOKENS, axes=("query", "key")).is_weights()
