"""Comparing a learner's tensors with a reference's, at the tolerance ``attn check`` promises."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence

import torch

from tracer.learner.sandbox.recorder import Record

ATOL = 1e-5
RTOL = 1e-5
LOW_PRECISION = (torch.float16, torch.bfloat16)
"""Floating types whose rounding is far above ``ATOL``: code that computes in one of them is
judged at a tolerance derived from it (:func:`judged_at`)."""
ROUNDINGS = 4
"""How many units of rounding (the type's epsilon) low-precision arithmetic may differ by."""

_tolerance = [ATOL, RTOL]
"""The tolerance of the check under way: ``ATOL``/``RTOL``, or one for a lower precision."""


def precision_of(tensors: Iterable[torch.Tensor | None]) -> torch.dtype | None:
    """The lowest floating precision among the learner's tensors, when it is below float32."""
    found = {t.dtype for t in tensors if t is not None and t.dtype in LOW_PRECISION}
    if not found:
        return None
    return torch.bfloat16 if torch.bfloat16 in found else torch.float16


def tolerance_for(dtype: torch.dtype | None) -> float:
    """The absolute and relative tolerance a result computed in ``dtype`` is judged at."""
    if dtype is None:
        return ATOL
    return ROUNDINGS * float(torch.finfo(dtype).eps)


@contextlib.contextmanager
def judged_at(dtype: torch.dtype | None) -> Iterator[float]:
    """Compare at the tolerance of ``dtype`` (float16, bfloat16) inside the block."""
    before = list(_tolerance)
    if dtype is not None:
        _tolerance[:] = [tolerance_for(dtype), tolerance_for(dtype)]
    try:
        yield _tolerance[0]
    finally:
        _tolerance[:] = before


def tolerance() -> tuple[float, float]:
    """(absolute, relative) tolerance of the check under way."""
    return _tolerance[0], _tolerance[1]


def close(mine: torch.Tensor, expected: torch.Tensor) -> bool:
    """Same shape, same kind (a mask never stands for scores) and values within tolerance.

    -inf equals -inf (masked scores); NaN equals nothing, so a broken result can
    never match a broken reference.
    """
    if tuple(mine.shape) != tuple(expected.shape):
        return False
    if (mine.dtype == torch.bool) != (expected.dtype == torch.bool):
        return False
    if mine.dtype == torch.bool:
        return bool(torch.equal(mine, expected))
    if not (mine.is_floating_point() and expected.is_floating_point()):
        return False
    return bool(
        torch.allclose(
            mine.double(),
            expected.double(),
            rtol=_tolerance[1],
            atol=_tolerance[0],
            equal_nan=False,
        )
    )


def max_difference(mine: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest absolute difference, counting a non-finite disagreement as infinite."""
    diff = cell_gaps(mine, expected)
    return float(diff.max()) if diff.numel() else 0.0


def cell_gaps(mine: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """|mine - expected| per cell: 0 where both are equal (-inf and -inf, NaN and NaN
    included), infinite where only one side is not finite or they are opposite infinities."""
    a, b = mine.double(), expected.double()
    same = (a == b) | (a.isnan() & b.isnan())
    return (a - b).abs().masked_fill(same, 0.0).nan_to_num(nan=float("inf"))


def find(expected: torch.Tensor, records: Sequence[Record], start: int = 0) -> Record | None:
    """The first recorded tensor equal to ``expected`` (or, for per-head tensors, to every head;
    for a vector, to the same numbers kept as a column).

    A learner may compute heads one at a time in a loop; a (heads, ...) tensor is
    then matched when each head's slice was computed somewhere.
    """
    for record in records[start:]:
        if record.value is not None and close(record.value, expected):
            return record
    if expected.dim() == 1:  # kept as a column: ``rowsum(dO * O, keepdim=True)``
        column = (expected.shape[0], 1)
        for record in records[start:]:
            value = record.value
            if value is not None and tuple(value.shape) == column and close(value[:, 0], expected):
                return record
    if expected.dim() >= 3:
        found = [find(expected[h], records, start) for h in range(expected.shape[0])]
        if all(r is not None for r in found):
            return min(found, key=lambda r: r.index if r is not None else 0)
    return None


def matches_any(tensor: torch.Tensor, candidates: Sequence[torch.Tensor]) -> bool:
    """Whether ``tensor`` equals one of the candidates or one head's slice of one."""
    for candidate in candidates:
        if close(tensor, candidate):
            return True
        if candidate.dim() >= 3 and any(close(tensor, part) for part in candidate):
            return True
    return False
