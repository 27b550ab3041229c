"""What to call each position along each axis of a tensor.

Variants name their tensors' axes (``axes=("query", "key")``). Only token
axes (``token``, ``query``, ``key``) are labelled with the tokens' text; every
other axis gets its own name and an index (``feature 0``, ``head 1``). A token
axis may say where it starts, ``"key:4"``, for a tile or a cache that holds
tokens 4 onwards. A tensor whose axes were not named is labelled by index
only: a label we would have to guess could be false.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracer.variant import TOKEN_AXES


@dataclass(frozen=True)
class Axis:
    """One dimension of a tensor: its name ("" when the variant named none) and its labels."""

    name: str
    labels: tuple[str, ...]
    tokens: bool = False
    """Whether the labels are tokens."""


@dataclass(frozen=True)
class Labels:
    rows: tuple[str, ...]
    columns: tuple[str, ...]


def parse_axis(spec: str) -> tuple[str, int]:
    """``"key:4"`` -> ``("key", 4)``; ``"feature"`` -> ``("feature", 0)``."""
    name, _, offset = spec.partition(":")
    return name, int(offset) if offset.isdigit() else 0


def label_axes(
    shape: Sequence[int],
    axes: Sequence[str] | None,
    tokens: Sequence[str],
    query: int | None = None,
) -> tuple[Axis, ...]:
    """An :class:`Axis` per dimension of ``shape``, from the names the variant gave."""
    tokens = tuple(tokens)
    names = tuple(axes) if axes is not None and len(axes) == len(shape) else ("",) * len(shape)
    result = []
    for size, spec in zip(shape, names, strict=True):
        name, offset = parse_axis(spec)
        labels: tuple[str, ...] | None = None
        if name in TOKEN_AXES:
            if name == "query" and size == 1 and query is not None and offset == 0:
                labels = (tokens[query],)
            elif offset + size <= len(tokens):
                labels = tokens[offset : offset + size]
        if labels is not None:
            result.append(Axis(name, labels, tokens=True))
        else:
            result.append(Axis(name, tuple(str(offset + i) for i in range(size))))
    return tuple(result)


def axis_labels(
    shape: Sequence[int],
    tokens: Sequence[str],
    query: int | None = None,
    axes: Sequence[str] | None = None,
) -> Labels:
    """Row and column labels for the last two axes (a 1-d tensor is one row; 0-d one cell)."""
    named = label_axes(shape, axes, tokens, query)
    if len(named) == 0:
        return Labels(rows=("",), columns=("",))
    if len(named) == 1:
        focused = axes is not None and query is not None and named[0].name == "key"
        return Labels(
            rows=(tokens[query],) if focused and query is not None else ("",),
            columns=named[0].labels,
        )
    return Labels(rows=named[-2].labels, columns=named[-1].labels)
