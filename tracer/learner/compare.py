"""Comparing a learner's tensors with a reference's, at the tolerance ``attn check`` promises."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tracer.learner.recorder import Record

ATOL = 1e-5
RTOL = 1e-5


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
        torch.allclose(mine.double(), expected.double(), rtol=RTOL, atol=ATOL, equal_nan=False)
    )


def max_difference(mine: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest absolute difference, counting a non-finite disagreement as infinite."""
    a, b = mine.double(), expected.double()
    same = (a == b) | (a.isnan() & b.isnan())
    diff = (a - b).abs().masked_fill(same, 0.0).nan_to_num(nan=float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


def find(expected: torch.Tensor, records: Sequence[Record], start: int = 0) -> Record | None:
    """The first recorded tensor equal to ``expected`` (or, for per-head tensors, to every head).

    A learner may compute heads one at a time in a loop; a (heads, ...) tensor is
    then matched when each head's slice was computed somewhere.
    """
    for record in records[start:]:
        if record.value is not None and close(record.value, expected):
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
