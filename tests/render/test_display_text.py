"""What every front end prints for numbers, labels and titles (issue 32, items 4 and 5).

Whole numbers print whole, repeated tokens are told apart, and a title too wide is cut
between words. Expected values are written out here or computed by torch, never read back
from the code under test.
"""

from __future__ import annotations

import math

import pytest
import torch

from tracer.lessons.grading import CellAnswer, parse_cells
from tracer.notebook import tensor_html
from tracer.render.labels import distinct_tokens
from tracer.render.text import format_number, format_scalar, format_tensor, is_whole, shorten
from tracer.sanitize import display_width
from tracer.tui.grid import TensorGrid

SENTENCE = ("the", "cat", "sat", "on", "the", "mat")


def cells(table: str) -> list[str]:
    """The printed values of a table, row by row (row labels and the header left out)."""
    return [value for line in table.splitlines()[1:] for value in line.split()[1:]]


@pytest.mark.parametrize(
    ("values", "printed"),
    [
        ([[742.0, 192.0]], ["742", "192"]),  # counts in a float tensor
        ([[0.0, 1.0], [1.0, 0.0]], ["0", "1", "1", "0"]),  # a 0/1 mask
        ([[0.0, -math.inf], [1.0, 0.0]], ["0", "-inf", "1", "0"]),  # whole, and -inf
        ([[1.0, 0.5], [0.0, 0.0]], ["1.0000", "0.5000", "0.0000", "0.0000"]),  # one fraction
    ],
)
def test_a_table_of_whole_numbers_prints_them_whole(
    values: list[list[float]], printed: list[str]
) -> None:
    tensor = torch.tensor(values)
    assert cells(format_tensor(tensor, ("a", "b"), axes=("query", "key"))) == printed
    # The app's grid prints each number the same way, and so does the notebook's table.
    grid = TensorGrid("t", tensor, ("a", "b"), axes=("query", "key"))
    assert [grid.format(v) for row in values for v in row] == printed
    html = tensor_html("t", tensor, ("query", "key"), ("a", "b"))
    assert all(f">{text}</td>" in html for text in printed)


def test_masks_and_token_ids_are_whole() -> None:
    assert is_whole(torch.tensor([True, False]))
    assert is_whole(torch.tensor([17, 9, 0]))
    assert is_whole(torch.tensor([math.nan, 3.0]))
    assert not is_whole(torch.tensor([3.0, 3.5]))
    assert format_scalar(2.0) == "2" and format_scalar(0.25) == "0.2500"
    assert format_number(2.0) == "2.0000"  # a lone number of a table that is not whole


def test_repeated_tokens_are_told_apart_in_every_front_end() -> None:
    assert distinct_tokens(SENTENCE) == ("the@0", "cat", "sat", "on", "the@4", "mat")
    weights = torch.eye(6)
    text = format_tensor(weights, SENTENCE, axes=("query", "key"))
    header, *rows = text.splitlines()
    assert header.split() == ["the@0", "cat", "sat", "on", "the@4", "mat"]
    assert [row.split()[0] for row in rows] == list(distinct_tokens(SENTENCE))
    grid = TensorGrid("w", weights, SENTENCE, axes=("query", "key"))
    assert list(grid.row_labels) == list(grid.column_labels) == list(distinct_tokens(SENTENCE))
    html = tensor_html("w", weights, ("query", "key"), SENTENCE)
    assert ">the@0</th>" in html and ">the@4</th>" in html
    # One query's row is labelled with that occurrence.
    row = format_tensor(weights[4], SENTENCE, query=4, axes=("query", "key"))
    assert row.splitlines()[1].split()[0] == "the@4"


def test_a_repeated_token_answers_a_cell_quiz_by_its_label_never_bare() -> None:
    labels = distinct_tokens(SENTENCE)
    answer = CellAnswer(frozenset({(4, 1)}), (6, 6), (labels, labels))
    assert parse_cells("the@4,cat", answer) == frozenset({(4, 1)})
    # Bare, it could be either: the learner is asked which (never graded on the first).
    assert parse_cells("the,cat", answer) == (
        "'the' occurs more than once; type which, as the table labels it: the@0, the@4"
    )


@pytest.mark.parametrize("width", range(8, 61, 3))
def test_a_title_is_cut_between_words(width: int) -> None:
    title = "The causal mask, and the band of the last 3 keys (1 = hidden)"
    cut = shorten(title, width)
    assert display_width(cut) <= width
    assert cut.endswith("…")
    kept = cut.removesuffix("…").split()
    words = title.split()[: len(kept)]
    assert kept[:-1] == words[:-1]  # whole words only, from the start; the last may lose
    assert words[-1].rstrip(",") == kept[-1]  # the comma it ended on
    assert cut.count("(") == cut.count(")")
    assert shorten(title, len(title)) == title
