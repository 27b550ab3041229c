"""What the tensor view draws: a labelled 2-D grid of numbers, read one row slice at a time.

The view asks for the cells it can see and nothing more, so a 1,024 × 1,024
tensor costs the same per frame as a 6 × 6 one. Tensors of rank above two
are shown with their leading axes folded into the rows (``head 0·Your``).
Labels come from the axes the variant named (:mod:`tracer.render.labels`):
an axis it did not name is labelled by index, never with guessed tokens.
The overview reads the grid downsampled to a block per screen cell.
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracer.render.labels import Axis, distinct_tokens, label_axes
from tracer.render.text import format_number, is_whole
from tracer.sanitize import visible
from tracer.session.explore import LoopCanvas
from tracer.variant import Tokens, source_tokens

Cell = tuple[int, int]


@dataclass(frozen=True)
class Highlight:
    """Rows, columns and cells to emphasise; ``current`` is the cell being computed."""

    rows: frozenset[int] = frozenset()
    columns: frozenset[int] = frozenset()
    cells: frozenset[Cell] = frozenset()
    current: Cell | None = None
    hidden: frozenset[Cell] = frozenset()
    """Cells whose value is a quiz's answer not yet given: drawn as "?"."""


@dataclass
class Grid:
    """Labels, a value range for the heatmap, and a way to read a slice of one row."""

    name: str
    row_labels: Sequence[str]
    column_labels: Sequence[str]
    low: float
    high: float
    shape: str
    highlight: Highlight = field(default_factory=Highlight)
    whole: bool = False
    """Every value is a whole number (counts, token ids, a 0/1 mask): printed without decimals."""

    @property
    def rows(self) -> int:
        return len(self.row_labels)

    @property
    def columns(self) -> int:
        return len(self.column_labels)

    def row(self, row: int, start: int, stop: int) -> list[float | None]:
        raise NotImplementedError

    def number_width(self) -> int:
        """Width of the widest number, from the range rather than from every value."""
        candidates = [self.format(self.low), self.format(self.high), self.format(0.0)]
        if self.has_non_finite():
            candidates.append("-inf")
        return max(len(text) for text in candidates)

    def format(self, value: float) -> str:
        """One of this grid's numbers, as every front end prints it (whole in a whole table)."""
        return format_number(value, self.whole)

    def shown_range(self) -> tuple[float, float] | None:
        """The finite minimum and maximum of the cells drawn (hidden cells left out); None
        when no finite cell is drawn: what an overview's legend says the cells span."""
        if not self.highlight.hidden:
            return (self.low, self.high) if self.low <= self.high else None
        low, high = math.inf, -math.inf
        for row in range(self.rows):
            for col, value in enumerate(self.row(row, 0, self.columns)):
                if value is None or not math.isfinite(value) or (row, col) in self.highlight.hidden:
                    continue
                low, high = min(low, value), max(high, value)
        return (low, high) if low <= high else None

    def has_non_finite(self) -> bool:
        return False

    def overview(self, rows: int, columns: int) -> list[list[float | None]]:
        """The grid averaged into ``rows`` × ``columns`` blocks (at most its own size).

        Non-finite values (a mask's -inf) and empty cells are left out of a
        block's mean; a block with nothing finite is None.
        """
        raise NotImplementedError

    def is_weights(self) -> bool:
        """Whether each row is a distribution over key tokens (attention weights)."""
        return False

    def drawn_key(self) -> Hashable | None:
        """Everything a drawing of this grid shows, as a key that is equal only for a grid
        that draws the same (the same values, labels, range and highlight); None where that
        cannot be said cheaply (a view draws it anew each time)."""
        return None

    def _described(self) -> tuple[Hashable, ...]:
        return (
            type(self).__name__, tuple(self.row_labels), tuple(self.column_labels), self.low,
            self.high, self.whole, self.highlight, self.shape,
        )  # fmt: skip


class Same:
    """An object in a key by identity, not kept alive by the key: once the object has gone,
    its key equals no other (a new object given its id included)."""

    __slots__ = ("_id", "_ref")

    def __init__(self, held: object) -> None:
        self._ref = weakref.ref(held)  # TypeError for an object that takes no weak reference
        self._id = id(held)

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Same):
            return False
        mine = self._ref()
        return mine is not None and mine is other._ref()


def _weak(held: object) -> weakref.ref[Any] | None:
    try:
        return weakref.ref(held)
    except TypeError:  # an object that takes no weak reference: nothing to key a drawing by
        return None


def block_means(
    data: Any, rows: int, columns: int, *, all_finite: bool = False
) -> list[list[float | None]]:
    """Mean of the finite values of ``data`` (2-d torch tensor) in rows × columns blocks.

    Adaptive average pooling does the work in one pass of native code (a
    4,096 × 4,096 table in milliseconds); pooling the finite-value mask beside
    the values turns the two averages into a mean over finite cells only.
    """
    # Here, not at the top: torch loads on the first table, not at start-up.
    import torch
    import torch.nn.functional as F

    height, width = data.shape
    rows, columns = max(1, min(rows, height)), max(1, min(columns, width))
    if height == 0 or width == 0:  # a 0×3 table: one block, with nothing in it
        return [[None] * columns for _ in range(rows)]
    data = data.to(torch.float32)
    if all_finite:
        pooled_values = F.adaptive_avg_pool2d(data[None], (rows, columns))[0]
        overview: list[list[float | None]] = pooled_values.to(torch.float64).tolist()
        return overview
    finite = torch.isfinite(data)
    values = torch.where(finite, data, torch.zeros((), dtype=torch.float32))
    stacked = torch.stack((values, finite.to(torch.float32)))  # pooled together, one call
    pooled = F.adaptive_avg_pool2d(stacked, (rows, columns))
    share = pooled[1]
    means = (pooled[0] / share.clamp(min=1e-12)).to(torch.float64).tolist()
    empty = (share == 0).tolist()
    return [
        [None if gone else value for value, gone in zip(row, gaps, strict=True)]
        for row, gaps in zip(means, empty, strict=True)
    ]


def tensor_labels(
    shape: Sequence[int], axes: Sequence[str] | None, tokens: Sequence[str], query: int | None
) -> tuple[list[str], list[str], tuple[Axis, ...]]:
    """Row and column labels for a tensor of any rank (leading axes folded into the rows)."""
    # Tokens come from the user's file: an escape sequence in one is shown, never emitted
    # (and never cut in half by the label width).
    source = source_tokens(tokens)
    tokens = Tokens(
        [visible(token, multiline=False) for token in tokens],
        None if source is None else [visible(token, multiline=False) for token in source],
    )
    named = label_axes(shape, axes, tokens, query)
    if len(named) == 0:
        return [""], [""], named
    if len(named) == 1:
        only = named[0]
        row = ""
        if only.name == "key" and query is not None and 0 <= query < len(tokens):
            row = distinct_tokens(tokens)[query]  # one query's row of a (query, key) table
        return [row], list(only.labels), named
    rows = list(named[-2].labels)
    if len(named) > 2:
        prefixes: list[str] = [""]
        for axis in named[:-2]:
            prefix = f"{axis.name} " if axis.name and not axis.tokens else ""
            prefixes = [f"{before}{prefix}{label}·" for before in prefixes for label in axis.labels]
        rows = [f"{prefix}{label}" for prefix in prefixes for label in rows]
    return rows, list(named[-1].labels), named


class TensorGrid(Grid):
    """A torch tensor of any rank, shown as rows × columns."""

    def __init__(
        self,
        name: str,
        tensor: Any,
        tokens: Sequence[str],
        query: int | None = None,
        highlight: Highlight | None = None,
        axes: Sequence[str] | None = None,
    ) -> None:
        # Here, not at the top: torch loads on the first table, not at start-up.
        import torch

        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"'{name}' is a {type(tensor).__name__}, not a torch tensor")
        if tensor.is_complex():
            raise TypeError(f"'{name}' holds complex numbers, which the tensor view cannot show")
        data = tensor.detach().cpu()
        if data.dtype == torch.bool or not data.is_floating_point():
            data = data.to(torch.float64)
        shape = tuple(data.shape)
        rows, columns, self.axes = tensor_labels(shape, axes, tokens, query)
        self._data = data.reshape(len(rows), len(columns))
        self._tensor = _weak(tensor)
        """The traced tensor (not kept alive by the table): what a drawing of it is keyed by."""
        low, high, self._non_finite, whole = _value_range(tensor, self._data)
        super().__init__(
            name=name,
            row_labels=rows,
            column_labels=columns,
            low=low,
            high=high,
            shape="×".join(str(n) for n in shape) or "scalar",
            highlight=highlight or Highlight(),
            whole=whole,
        )
        self._overview_key: tuple[int, int] | None = None
        self._overview: list[list[float | None]] = []

    def row(self, row: int, start: int, stop: int) -> list[float | None]:
        values: list[float | None] = self._data[row, start:stop].tolist()
        return values

    def drawn_key(self) -> Hashable | None:
        # The traced tensor itself (the same object each time a step is shown) and torch's
        # count of its in-place changes: values can be said without reading them.
        tensor = self._tensor() if self._tensor is not None else None
        version = getattr(tensor, "_version", None)
        if not isinstance(version, int):  # a tensor type that does not count its changes
            return None
        try:
            same = Same(tensor)
        except TypeError:
            return None
        axes = tuple(axis.name for axis in self.axes)
        return (*self._described(), same, version, axes, self._non_finite)

    def has_non_finite(self) -> bool:
        return bool(self._non_finite)

    def overview(self, rows: int, columns: int) -> list[list[float | None]]:
        key = (rows, columns)
        if self._overview_key != key:
            self._overview = block_means(self._data, rows, columns, all_finite=not self._non_finite)
            self._overview_key = key
        return self._overview

    def is_weights(self) -> bool:
        # Here, not at the top: torch loads on the first table, not at start-up.
        import torch

        if not self.axes or self.axes[-1].name != "key" or self._data.numel() == 0:
            return False
        data = self._data
        if not bool(torch.isfinite(data).all()) or bool((data < 0).any()):
            return False
        return bool(torch.allclose(data.sum(dim=-1), torch.ones(()), atol=1e-4))


class CanvasGrid(Grid):
    """A loop's matrix as it stood after sub-step ``upto``: later cells are still empty."""

    def __init__(
        self,
        name: str,
        canvas: LoopCanvas,
        upto: int,
        tokens: Sequence[str],
        highlight: Highlight,
        axes: Sequence[str] | None = None,
    ) -> None:
        self._canvas = canvas
        self._upto = upto
        low, high = (canvas.low, canvas.high) if canvas.low <= canvas.high else (0.0, 0.0)

        rows, columns, _ = tensor_labels((canvas.rows, canvas.cols), axes, tokens, None)
        super().__init__(
            name=name,
            row_labels=rows,
            column_labels=columns,
            low=low,
            high=high,
            shape=f"{canvas.rows}×{canvas.cols}",
            highlight=highlight,
            whole=_canvas_whole(canvas),
        )

    def row(self, row: int, start: int, stop: int) -> list[float | None]:
        value = self._canvas.value
        upto = self._upto
        return [value(row, col, upto) for col in range(start, stop)]

    def drawn_key(self) -> Hashable:
        # The canvas, how far into the loop, and its count of writes (a loop still running
        # writes more: the drawing of an earlier moment is then drawn anew, to be safe).
        canvas = self._canvas
        return (*self._described(), Same(canvas), canvas.version, self._upto)

    def filled(self) -> int:
        return sum(1 for order in self._canvas.order if 0 <= order <= self._upto)

    def overview(self, rows: int, columns: int) -> list[list[float | None]]:
        # Here, not at the top: torch loads on the first table, not at start-up.
        import torch

        canvas = self._canvas
        values = torch.frombuffer(canvas.values, dtype=torch.float64).reshape(
            canvas.rows, canvas.cols
        )
        order = torch.frombuffer(canvas.order, dtype=torch.int64).reshape(canvas.rows, canvas.cols)
        written = (order >= 0) & (order <= self._upto)
        shown = torch.where(written, values, torch.full((), math.nan, dtype=torch.float64))
        return block_means(shown, rows, columns)


_CANVAS_WHOLE: dict[int, tuple[LoopCanvas, int, int, bool]] = {}


def _canvas_whole(canvas: LoopCanvas) -> bool:
    """Whether every value the loop has written is whole (cells not yet written are nan).

    Checked again only when the loop has written more: a key press inside a loop over a
    1,024 × 1,024 matrix reads the answer, not a million values.
    """
    # Here, not at the top: torch loads on the first table, not at start-up.
    import torch

    if not canvas.values:
        return False
    cached = _CANVAS_WHOLE.get(id(canvas))
    size = len(canvas.values)
    if cached is not None and cached[0] is canvas and cached[1:3] == (canvas.last_index, size):
        return cached[3]
    whole = is_whole(torch.frombuffer(canvas.values, dtype=torch.float64))
    _CANVAS_WHOLE.clear()  # one loop at a time is on screen
    _CANVAS_WHOLE[id(canvas)] = (canvas, canvas.last_index, size, whole)
    return whole


_RANGES: OrderedDict[int, tuple[Any, float, float, bool, bool]] = OrderedDict()
_RANGES_KEPT = 32


def _value_range(original: Any, data: Any) -> tuple[float, float, bool, bool]:
    """The finite minimum and maximum, whether any value is inf or nan, and whether every
    value is whole (:func:`~tracer.render.text.is_whole`).

    One pass over the tensor when every value is finite (the usual case), and
    cached per tensor, so stepping back and forth over a 1,024 × 1,024 stage
    does not rescan it.
    """
    # Here, not at the top: torch loads on the first table, not at start-up.
    import torch

    key = id(original)
    cached = _RANGES.get(key)
    if cached is not None and cached[0] is original:
        _RANGES.move_to_end(key)
        return cached[1], cached[2], cached[3], cached[4]
    if data.numel() == 0:
        result = (0.0, 0.0, False)
    else:
        low_t, high_t = torch.aminmax(data)
        low, high = float(low_t), float(high_t)
        if math.isfinite(low) and math.isfinite(high):
            result = (low, high, False)
        else:
            finite = data[torch.isfinite(data)]
            if finite.numel():
                result = (float(finite.min()), float(finite.max()), True)
            else:
                result = (0.0, 0.0, True)
    whole = is_whole(original)
    # Holding the tensor keeps its id from being reused by another while cached.
    _RANGES[key] = (original, *result, whole)
    while len(_RANGES) > _RANGES_KEPT:
        _RANGES.popitem(last=False)
    return (*result, whole)
