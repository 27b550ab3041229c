"""What to call each position along each axis of a tensor.

Variants name their tensors' axes (``axes=("query", "key")``). Only token
axes (``token``, ``query``, ``key``) are labelled with the tokens' text; every
other axis gets its own name and an index (``feature 0``, ``head 1``). A token
axis may say where it starts, ``"key:4"``, for a tile or a cache that holds
tokens 4 onwards. A tensor whose axes were not named is labelled by index
only: a label we would have to guess could be false.

The ``--query`` focus contract: a variant names the axes it has for all
queries; when one query is focused, a tensor that lacks its ``query`` axis
(one fewer dimension than named) is that query's slice, and its rows are
labelled with the focused token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tracer.variant import TOKEN_AXES, SubStep, parse_axis, source_tokens


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


def distinct_tokens(tokens: Sequence[str]) -> tuple[str, ...]:
    """The tokens as table labels: a token the text repeats carries its 0-based position,
    as lessons name it (``the@0 cat sat on the@4 mat``), so its rows are told apart."""
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return tuple(
        f"{token}@{index}" if counts[token] > 1 else token for index, token in enumerate(tokens)
    )


_POSITION = re.compile(r"@\d+$")


def bare_token(label: str) -> str:
    """A label without the position :func:`distinct_tokens` gave it (``the@4`` → ``the``)."""
    return _POSITION.sub("", label)


def label_axes(
    shape: Sequence[int],
    axes: Sequence[str] | None,
    tokens: Sequence[str],
    query: int | None = None,
    limit: int | None = None,
) -> tuple[Axis, ...]:
    """An :class:`Axis` per dimension of ``shape``, from the names the variant gave.

    ``limit``: label only the first ``limit`` positions of each axis (what a renderer
    draws); whether an axis is labelled with tokens still depends on its whole length.
    """
    source = source_tokens(tokens)
    source = distinct_tokens(source) if source is not None else None
    tokens = distinct_tokens(tokens)
    names = effective_axes(shape, axes, query) or ("",) * len(shape)
    result = []
    for size, spec in zip(shape, names, strict=True):
        name, offset = parse_axis(spec)
        labels: tuple[str, ...] | None = None
        # With a second sequence, keys are its positions; "source" always is.
        own = source if name == "source" or (name == "key" and source is not None) else tokens
        if name in TOKEN_AXES and own is not None:
            if name == "query" and size == 1 and query is not None and offset == 0:
                labels = (tokens[query],)
            elif offset + size <= len(own):
                labels = own[offset : offset + size]
        shown = size if limit is None else min(size, limit)
        if labels is not None:
            result.append(Axis(name, labels[:shown], tokens=True))
        else:
            result.append(Axis(name, tuple(str(offset + i) for i in range(shown))))
    return tuple(result)


def axes_hint(name: str, guessed: Sequence[str]) -> str:
    """The one-line hint under a table whose token labels the tracer inferred (see checks)."""
    if name not in guessed:
        return ""
    return (
        f"(tensor '{name}' names no axes; labelled with the tokens because it is a tokens × "
        f'tokens table: declare axes=("query", "key") in its stage)'
    )


def effective_axes(
    shape: Sequence[int], axes: Sequence[str] | None, query: int | None
) -> tuple[str, ...] | None:
    """The axis names that match ``shape``: as named, or without the focused ``query`` axis."""
    if axes is None:
        return None
    axes = tuple(axes)
    if len(axes) == len(shape):
        return axes
    if query is not None and len(axes) == len(shape) + 1:
        names = [parse_axis(a)[0] for a in axes]
        if "query" in names:
            return axes[: names.index("query")] + axes[names.index("query") + 1 :]
    return None


def focused_row(shape: Sequence[int], axes: Sequence[str] | None, query: int | None) -> bool:
    """Whether this tensor is the focused query's slice (its query axis was dropped)."""
    return (
        axes is not None
        and query is not None
        and len(axes) == len(shape) + 1
        and effective_axes(shape, axes, query) is not None
    )


def axis_labels(
    shape: Sequence[int],
    tokens: Sequence[str],
    query: int | None = None,
    axes: Sequence[str] | None = None,
    limit: int | None = None,
) -> Labels:
    """Row and column labels for the last two axes (a 1-d tensor is one row; 0-d one cell)."""
    named = label_axes(shape, axes, tokens, query, limit)
    focused = query is not None and focused_row(shape, axes, query)
    row = distinct_tokens(tokens)[query] if focused and query is not None else ""
    if len(named) == 0:
        return Labels(rows=(row,), columns=("",))
    if len(named) == 1:
        return Labels(rows=(row,), columns=named[0].labels)
    return Labels(rows=named[-2].labels, columns=named[-1].labels)


def loop_matrix_axes(axes: Sequence[str] | None) -> tuple[str, ...] | None:
    """Axis names of the matrix a loop fills, from the axes of the stage it builds (its first
    tensor's): a stage focused on one query is one row of the (query, key) table."""
    if axes is None:
        return None
    if len(axes) == 2:
        return tuple(axes)
    if tuple(axes) == ("key",):
        return ("query", "key")
    return None


def position_tokens(
    position: Sequence[int],
    axes: Sequence[str] | None,
    tokens: Sequence[str],
    sub: SubStep | None = None,
) -> tuple[str, ...]:
    """The token each index of a loop sub-step's position names ("" where none does).

    ``axes``: the loop's matrix axes (:func:`loop_matrix_axes`). An index names a token only
    along a token axis; along a ``source`` axis, or a ``key`` axis of a run with a second
    sequence (cross-attention), it names a token of the source, never the target's token at
    that index. Unknown axes, or a position that does not index them, name nothing: an index
    alone is never false.

    ``sub``: the sub-step itself. A loop over tiles or blocks of tokens declares its tensors'
    token axes from where the tile starts (``"query:2"`` for queries 2 and 3): where a
    sub-step's tensors hold a window of that kind of token other than the one token the index
    would name, the index counts tiles, not tokens, and names none (flash-backward's
    ``(1, 0)`` is key tile 1, query tile 0, not the query "journey").
    """
    if axes is None or len(axes) != len(position):
        return ("",) * len(position)
    source = source_tokens(tokens)
    named = []
    for index, spec in zip(position, axes, strict=True):
        name, start = parse_axis(spec)
        if name not in TOKEN_AXES or _windowed(sub, name, index + start):
            named.append("")
            continue
        sequence = source if name == "source" or (name == "key" and source) else tokens
        at = index + start
        named.append(sequence[at] if sequence is not None and 0 <= at < len(sequence) else "")
    return tuple(named)


def _windowed(sub: SubStep | None, kind: str, token: int) -> bool:
    """Whether ``sub``'s tensors hold a window of ``kind`` tokens (an axis written
    ``"kind:start"``) that is not the single token ``token``: the loop runs over tiles."""
    if sub is None:
        return False
    for name, specs in sub.axes.items():
        shape = getattr(sub.tensors.get(name), "shape", None)
        for axis, spec in enumerate(specs):
            written, _, offset = spec.partition(":")
            if written != kind or not offset:
                continue
            size = shape[axis] if shape is not None and axis < len(shape) else 1
            if (parse_axis(spec)[1], size) != (token, 1):
                return True
    return False


def holds_stage(stage: str, result: str) -> bool:
    """Whether a loop's table holds ``stage``'s own values, so it may be titled "<stage> so
    far": the number each sub-step writes (``result``, a scalar's name) is the stage's tensor
    (naive-loop's ``score`` of ``scores``), not another quantity (lesson 14's ``D`` in the
    ``grad_scores`` loop). The app titles its loop tables by it and ``attn lesson check``
    checks the tables so titled."""
    held = result or stage
    return held in (stage, f"{stage}s") or f"{held}s" == stage
