"""One operation away: the cells to hide besides a hidden answer so that what a screen still
shows gives it by no single operation (:func:`tracer.lessons.hiding.conceal` asks here).

Along a row or a column of one table (:func:`close`): a constant step, or a step that grows
by a constant, carried on from the shown neighbours of a sequence, the middle of the two
either side (:func:`_one_step_away`), and a known total less the shown rest of a line
(:func:`_known_totals`). Over the tables of a screen (:func:`derived_on_screen`): a shown
cell times or divided by a constant the lesson states, and the difference of two shown cells.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol

from tracer.lessons.unsaid import PLAIN_LIMIT

if TYPE_CHECKING:
    import torch


class Secret(Protocol):
    """An unanswered number quiz's answer, as the rules read it
    (:class:`tracer.lessons.hiding.Secret`)."""

    @property
    def number(self) -> int: ...

    @property
    def value(self) -> float: ...

    @property
    def single_digit(self) -> bool: ...

    def near(self, value: float) -> bool: ...


Cell = tuple[int, int]
"""A cell as drawn: (row, column) of the tensor folded to two dimensions."""


SUMS_TO_ONE = 1e-4
"""How close to 1 a row or column of non-negative values must add up for a learner to read
it as one that adds up to 1 (a softmax's row), so a hidden cell in it is 1 minus the rest."""


def close(
    grid: torch.Tensor, hidden: set[Cell], kept: tuple[Secret, ...], totals: Sequence[float]
) -> set[Cell]:
    """The cells of one table to hide besides ``hidden`` so that no hidden cell follows from
    the shown ones of its row or column by one operation (:func:`_one_step_away`,
    :func:`_known_totals`); ``totals``: the numbers shown on the screen."""
    shut = set(hidden)
    if not shut or not grid.numel():
        return set()
    while True:
        more = _one_step_away(grid, shut, kept)
        more |= _known_totals(grid, shut | more, totals)
        if not more:
            break
        shut |= more
    return shut - hidden


DEEPEST_STEP = 2
"""How far a constant step is carried on to reach a hidden answer (:func:`_one_step_away`):
from the cell beside it, or from one cell further (the hidden 192 of a running total, and the
742 one level deeper)."""


def _monotone(line: list[float]) -> bool:
    """Whether ``line`` (three values or more, all finite) only rises or only falls: a
    sequence (a loss curve, a running total), which a learner may carry on."""
    if len(line) < 3 or not all(math.isfinite(v) for v in line):
        return False
    steps = [b - a for a, b in pairwise(line)]
    return all(s > 0 for s in steps) or all(s < 0 for s in steps)


def _carried(values: list[float], k: int) -> float:
    """The value at 0 of the polynomial through ``values`` at k, k + 1, ...: a sequence whose
    step is constant (two values), or grows by a constant (three: a running total whose every
    step costs a little more), carried on back to the hidden cell."""
    xs = [k + j for j in range(len(values))]
    total = 0.0
    for j, value in enumerate(values):
        weight = 1.0
        for m, x in enumerate(xs):
            if m != j:
                weight *= (0 - x) / (xs[j] - x)
        total += value * weight
    return total


def _one_step_away(grid: torch.Tensor, hidden: set[Cell], kept: tuple[Secret, ...]) -> set[Cell]:
    """The cells to hide besides ``hidden`` so that no hidden answer follows from its shown
    neighbours along a row or a column by one operation: a constant step carried on from the
    two shown cells beyond it (1.8300 + (1.8300 − 1.8250)), a step that grows by a constant
    (or whose growth does) carried on from three (four) of them (a running total whose every
    step costs a little more), or the middle of the two shown cells either side of it. Only
    along a line that only rises or only falls (a sequence); a row of weights is not one. The nearer shown cell is hidden, and the rule applied again past
    it (k cells of that step from the next two shown cells: the answer one level deeper)."""
    rows, columns = grid.shape
    values = grid.tolist()
    shut = set(hidden)

    def shown(cell: Cell) -> float | None:
        row, column = cell
        if not (0 <= row < rows and 0 <= column < columns) or cell in shut:
            return None
        value = float(values[row][column])
        return value if math.isfinite(value) else None

    changed = True
    while changed:
        changed = False
        for row, column in sorted(shut):
            if not (0 <= row < rows and 0 <= column < columns):
                continue
            value = float(values[row][column])
            secrets = [secret for secret in kept if secret.near(value)]
            if not secrets:
                continue
            for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                line = values[row] if dr == 0 else [values[r][column] for r in range(rows)]
                if not _monotone(line):
                    continue  # a row of weights is no sequence a learner carries on
                # The first shown cell that way (past cells already hidden), and the next.
                k = 1
                while (row + k * dr, column + k * dc) in shut:
                    k += 1
                if k > DEEPEST_STEP:
                    continue  # a line carried on further is a guess, not a derivation
                near = (row + k * dr, column + k * dc)
                beyond = [shown((row + (k + j) * dr, column + (k + j) * dc)) for j in range(4)]
                a = beyond[0]
                c = shown((row - dr, column - dc)) if k == 1 else None
                guesses = []
                for degree in (1, 2, 3):  # a constant step, a step that grows by a constant...
                    points = beyond[: degree + 1]
                    if all(value is not None for value in points):
                        guesses.append(_carried(points, k))  # type: ignore[arg-type]
                if a is not None and c is not None:
                    guesses.append((a + c) / 2)  # the middle of its two neighbours
                if any(secret.near(guess) for guess in guesses for secret in secrets):
                    shut.add(near)
                    changed = True
    return shut - set(hidden)


def _known_totals(grid: torch.Tensor, hidden: set[Cell], totals: Sequence[float]) -> set[Cell]:
    """The cells to hide besides ``hidden`` so that no hidden cell is a known total less the
    shown rest of its row or column (or the sum of the rest, where it is the total): one more
    cell of such a line is hidden, the shown one nearest to it, so that a subtraction gives
    only the sum of the two. A line's total is known where it adds up to 1 with no negative
    value (a softmax's row), to 0 with values of both signs (a row of dS), where one of its
    cells is the sum of the others (a total drawn beside them) or where it is a number shown
    on the screen (``totals``, sorted). A table of whole numbers (a mask's 0s and 1s, a
    count) is read so only against a total beyond a single digit shown on the screen."""
    import torch  # here: the walk is imported before torch is needed (tables come from a run)

    rows, columns = grid.shape
    finite = grid[torch.isfinite(grid)]
    whole = not bool((finite != finite.trunc()).any())
    values = grid.tolist()
    shut = set(hidden)
    while True:
        per_row: dict[int, list[Cell]] = {}
        per_column: dict[int, list[Cell]] = {}
        for row, column in shut:
            if 0 <= row < rows and 0 <= column < columns:
                per_row.setdefault(row, []).append((row, column))
                per_column.setdefault(column, []).append((row, column))
        more: set[Cell] = set()
        for cells in per_row.values():
            if len(cells) == 1 and columns > 1:
                (row, column), line = cells[0], [(cells[0][0], c) for c in range(columns)]
                more |= _one_more(line, column, values, shut, whole, totals)
        for cells in per_column.values():
            if len(cells) == 1 and rows > 1:
                (row, column), line = cells[0], [(r, cells[0][1]) for r in range(rows)]
                more |= _one_more(line, row, values, shut, whole, totals)
        more -= shut
        if not more:
            return shut - hidden
        shut |= more


def _one_more(
    line: list[Cell],
    at: int,
    values: list[list[float]],
    shut: set[Cell],
    whole: bool,
    totals: Sequence[float],
) -> set[Cell]:
    """The cell to hide beside the one hidden cell ``line[at]`` if the line's total is known
    (:func:`_known_totals`): the nearest shown one; none if the total is not known."""
    numbers = [values[row][column] for row, column in line]
    if not all(math.isfinite(value) for value in numbers):
        return set()
    total = math.fsum(numbers)
    size = math.fsum(abs(value) for value in numbers)
    if whole:
        known = (
            abs(total) > PLAIN_LIMIT
            and sum(1 for value in numbers if value) > 1
            and _among(total, totals, 0.0)
        )
    else:
        known = (
            (all(value >= 0 for value in numbers) and abs(total - 1) <= SUMS_TO_ONE)
            or (
                any(value > 0 for value in numbers)
                and any(value < 0 for value in numbers)
                and abs(total) <= SUMS_TO_ONE * max(1.0, size)
            )
            or any(
                value and abs(total - 2 * value) <= SUMS_TO_ONE * max(1.0, abs(value))
                for value in numbers
            )
            or (
                sum(1 for value in numbers if value) > 1  # not the cell itself, shown twice
                and _among(total, totals, SUMS_TO_ONE * max(1.0, abs(total)))
            )
        )
    if not known:
        return set()
    for distance in range(1, len(line)):
        for place in (at + distance, at - distance):
            if 0 <= place < len(line) and line[place] not in shut:
                return {line[place]}
    return set()


def _among(value: float, sorted_values: Sequence[float], within: float) -> bool:
    """Whether a number of ``sorted_values`` is within ``within`` of ``value``."""
    place = bisect.bisect_left(sorted_values, value - within)
    return place < len(sorted_values) and sorted_values[place] <= value + within


SCREEN_CELLS = 1024
"""Tables of at most this many cells are weighed together, a screen at a time
(:func:`_derived_on_screen`, and the totals :func:`_known_totals` reads): a larger one is a
run's whole text, which a learner reads no sum or difference off."""

EXACT = 1e-6
"""How close (relative to the numbers, at least 1) a product or a difference of shown numbers
must come to a hidden answer to be the answer worked out, not a number that happens to be
near it (the tensors are float32)."""


def shown_values(grids: Sequence[torch.Tensor], shut: Sequence[set[Cell]]) -> list[float]:
    """Every finite number shown on the screen (tables of at most :data:`SCREEN_CELLS`), sorted."""
    found = []
    for grid, hidden in zip(grids, shut, strict=True):
        if not grid.numel() or grid.numel() > SCREEN_CELLS:
            continue
        columns = int(grid.shape[-1])
        for flat, value in enumerate(grid.reshape(-1).tolist()):
            if math.isfinite(value) and (flat // columns, flat % columns) not in hidden:
                found.append(float(value))
    return sorted(found)


def derived_on_screen(
    grids: Sequence[torch.Tensor],
    shut: Sequence[set[Cell]],
    kept: tuple[Secret, ...],
    stated: Sequence[float],
) -> list[tuple[int, Cell, int]]:
    """Cells to hide, as (table, cell, quiz step), so that no hidden answer is one operation
    on the numbers shown anywhere on the screen: a shown cell times or divided by a constant
    the lesson states (``stated``: the scale 1/√d, a count), and the difference of two shown
    cells (one of the two is hidden, the later). The answer must come out to within
    :data:`EXACT`: it is worked out so, not near it by chance. Whole numbers are left out
    (the lesson's settings: a count times a count), and so are single-digit answers."""
    import torch  # here: the walk is imported before torch is needed

    kept = tuple(secret for secret in kept if not secret.single_digit)
    if not kept:
        return []
    places: list[tuple[int, Cell]] = []
    numbers: list[float] = []
    for at, grid in enumerate(grids):
        if not grid.numel() or grid.numel() > SCREEN_CELLS:
            continue
        columns = int(grid.shape[-1])
        for flat, value in enumerate(grid.reshape(-1).tolist()):
            cell = (flat // columns, flat % columns)
            if cell in shut[at] or not math.isfinite(value):
                continue
            if value == 0 or value == math.trunc(value):
                continue  # a setting, a mask's 0 or 1: no derivation a learner makes
            places.append((at, cell))
            numbers.append(float(value))
    if not numbers:
        return []
    shown = torch.tensor(numbers, dtype=torch.float64)
    found: dict[tuple[int, Cell], int] = {}
    for secret in kept:
        answer = secret.value
        for factor in stated:
            for worked in (shown * factor, shown / factor):
                exact = EXACT * torch.clamp(worked.abs(), min=1.0)
                for (place,) in ((worked - answer).abs() <= exact).nonzero().tolist():
                    found.setdefault(places[place], secret.number)
        # Differences: for each shown a, a shown b = a − answer, found by a sorted search.
        order = torch.argsort(shown)
        ordered = shown[order]
        wanted = shown - answer
        starts = torch.searchsorted(ordered, wanted - EXACT * torch.clamp(shown.abs(), min=1.0))
        for first, start in enumerate(starts.tolist()):
            bound = EXACT * max(1.0, abs(numbers[first]))
            for other in range(start, len(numbers)):
                b = int(order[other])
                if float(ordered[other]) > float(wanted[first]) + bound:
                    break
                if b == first:
                    continue
                pair = (places[first], places[b])
                if any(place in found for place in pair):
                    continue
                found[max(pair)] = secret.number
    return [(at, cell, step) for (at, cell), step in found.items()]
