"""Which axis of a tensor runs over tokens, and what to call each row and column.

Plugins record bare tensors; we label an axis with tokens when its length is
the number of tokens. The first axis of a focused (single-query) 1-D tensor
is the query itself, so its one row is labelled with the query's token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Labels:
    rows: tuple[str, ...]
    columns: tuple[str, ...]


def axis_labels(shape: Sequence[int], tokens: Sequence[str], query: int | None = None) -> Labels:
    """Row and column labels for a 0-, 1- or 2-d tensor of ``shape``."""
    tokens = tuple(tokens)
    count = len(tokens)

    def along(size: int) -> tuple[str, ...]:
        return tokens if size == count else tuple(str(i) for i in range(size))

    if len(shape) == 0:
        return Labels(rows=(tokens[query] if query is not None else "",), columns=("",))
    if len(shape) == 1:
        row = tokens[query] if query is not None else ""
        return Labels(rows=(row,), columns=along(shape[0]))
    rows = along(shape[-2])
    return Labels(rows=rows, columns=along(shape[-1]))
