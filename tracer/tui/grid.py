"""What the tensor view draws: a labelled 2-D grid of numbers, read one row slice at a time.

The view asks for the cells it can see and nothing more, so a 1,024 × 1,024
tensor costs the same per frame as a 6 × 6 one. Tensors of rank above two
are shown with their leading axes folded into the rows (``0·Your``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracer.render.labels import axis_labels
from tracer.render.text import format_number
from tracer.tui.stepper import LoopCanvas

Cell = tuple[int, int]


@dataclass(frozen=True)
class Highlight:
    """Rows, columns and cells to emphasise; ``current`` is the cell being computed."""

    rows: frozenset[int] = frozenset()
    columns: frozenset[int] = frozenset()
    cells: frozenset[Cell] = frozenset()
    current: Cell | None = None


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
        candidates = [format_number(self.low), format_number(self.high), "0.0000"]
        if self.has_non_finite():
            candidates.append("-inf")
        return max(len(text) for text in candidates)

    def has_non_finite(self) -> bool:
        return False


class TensorGrid(Grid):
    """A torch tensor of any rank, shown as rows × columns."""

    def __init__(
        self,
        name: str,
        tensor: Any,
        tokens: Sequence[str],
        query: int | None = None,
        highlight: Highlight | None = None,
    ) -> None:
        import torch

        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"'{name}' is a {type(tensor).__name__}, not a torch tensor")
        if tensor.is_complex():
            raise TypeError(f"'{name}' holds complex numbers, which the tensor view cannot show")
        data = tensor.detach().cpu()
        if data.dtype == torch.bool or not data.is_floating_point():
            data = data.to(torch.float64)
        shape = tuple(data.shape)
        labels = axis_labels(shape[-2:] if len(shape) > 2 else shape, tokens, query)
        rows: list[str] = list(labels.rows)
        if data.dim() > 2:
            prefixes = ["·".join(str(i) for i in index) for index in _indices(shape[:-2])]
            rows = [f"{prefix}·{label}" for prefix in prefixes for label in labels.rows]
        self._data = data.reshape(len(rows), len(labels.columns))
        low, high, self._non_finite = _value_range(tensor, self._data)
        super().__init__(
            name=name,
            row_labels=rows,
            column_labels=list(labels.columns),
            low=low,
            high=high,
            shape="×".join(str(n) for n in shape) or "scalar",
            highlight=highlight or Highlight(),
        )

    def row(self, row: int, start: int, stop: int) -> list[float | None]:
        values: list[float | None] = self._data[row, start:stop].tolist()
        return values

    def has_non_finite(self) -> bool:
        return bool(self._non_finite)


class CanvasGrid(Grid):
    """A loop's matrix as it stood after sub-step ``upto``: later cells are still empty."""

    def __init__(
        self, name: str, canvas: LoopCanvas, upto: int, tokens: Sequence[str], highlight: Highlight
    ) -> None:
        self._canvas = canvas
        self._upto = upto
        low, high = (canvas.low, canvas.high) if canvas.low <= canvas.high else (0.0, 0.0)

        def along(size: int) -> list[str]:
            return list(tokens) if size == len(tokens) else [str(i) for i in range(size)]

        super().__init__(
            name=name,
            row_labels=along(canvas.rows),
            column_labels=along(canvas.cols),
            low=low,
            high=high,
            shape=f"{canvas.rows}×{canvas.cols}",
            highlight=highlight,
        )

    def row(self, row: int, start: int, stop: int) -> list[float | None]:
        value = self._canvas.value
        upto = self._upto
        return [value(row, col, upto) for col in range(start, stop)]

    def filled(self) -> int:
        return sum(1 for order in self._canvas.order if 0 <= order <= self._upto)


_RANGES: OrderedDict[int, tuple[Any, float, float, bool]] = OrderedDict()
_RANGES_KEPT = 32


def _value_range(original: Any, data: Any) -> tuple[float, float, bool]:
    """The finite minimum and maximum, and whether any value is inf or nan.

    One pass over the tensor when every value is finite (the usual case), and
    cached per tensor, so stepping back and forth over a 1,024 × 1,024 stage
    does not rescan it.
    """
    import torch

    key = id(original)
    cached = _RANGES.get(key)
    if cached is not None and cached[0] is original:
        _RANGES.move_to_end(key)
        return cached[1], cached[2], cached[3]
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
    # Holding the tensor keeps its id from being reused by another while cached.
    _RANGES[key] = (original, *result)
    while len(_RANGES) > _RANGES_KEPT:
        _RANGES.popitem(last=False)
    return result


def _indices(shape: Sequence[int]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for size in shape:
        out = [(*index, i) for index in out for i in range(size)]
    return out
