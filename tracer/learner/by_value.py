"""Diagnosis by value: a mistake no variant declares, named from the numbers alone.

When the learner's tensor at the first stage that differs is not any declared
mistake's, :mod:`tracer.learner.relations` measures how it relates to the
reference's. This module adds the relations that need the stage's own
structure:

- the expected tensor transposed and times a constant (einsum letters that swap
  the scores, scaled on the way);
- the expected tensor without one additive term, or with one more: a term of
  the stage's declared equation (``Sum``, ``Difference``, ``AddBias``), or a
  product of two tensors the reference computed (``P ∘ D``, ``dV W_vᵀ``);
- a mask left out, or put, on a region the sentence names: above the diagonal,
  inside the diagonal tiles, outside the sliding window, on the diagonal;
- blocks of rows read back in another order (a paged cache's pool order);
- a per-query quantity summed over one tile only: the values one line gives on
  its passes add up to the expected ones (D computed inside the loop over tiles).

A wrong name is worse than none. Every relation must fit every cell within the
check's tolerance, and none is named from fewer than :data:`MIN_DIFFERING`
differing cells, from a tensor of fewer than :data:`MIN_CELLS` cells, or
against an expected tensor that holds one value everywhere (a factor, a term or
a mask fits anything there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

import torch

from tracer.learner.compare import close, tolerance
from tracer.variant import AddBias, Difference, Sum, equation_formula

if TYPE_CHECKING:
    from tracer.learner.recorder import Record


class Known(Protocol):
    """What the relations are measured against (:class:`tracer.learner.relations.Known`)."""

    @property
    def stage(self) -> str: ...
    @property
    def tensors(self) -> dict[str, torch.Tensor]: ...
    @property
    def equations(self) -> tuple[object, ...]: ...


FactorName = Callable[[torch.Tensor, torch.Tensor], "str | None"]
"""The name of the constant c with ``mine = c × expected``, when there is one the check names."""

MIN_DIFFERING = 3
"""Fewest differing cells a relation is named from: on one or two cells many fit."""
MIN_CELLS = 4
"""Smallest tensor a relation is named on (a 1×1 tensor is any constant times another)."""
MAX_TERMS = 40
"""Reference tensors tried as factors of a missing term (pairs of them are tried)."""
MAX_TERM_CELLS = 4096
"""Largest tensor searched for a missing product term (the search multiplies pairs)."""
MAX_PRODUCTS = 600
"""Products of two reference tensors tried for one tensor of the learner's, at most."""

Relation = tuple[str, str]

TITLES = {
    "transposed-scaled": "transposed, and off by a constant factor",
    "missing-term": "one term left out (or added)",
    "unmasked-region": "a region left unmasked",
    "masked-region": "a region masked that should not be",
    "blocks-permuted": "blocks in another order",
    "one-tile": "summed over one tile only",
    "right-on-region": "right on one region only",
}
"""The titles of the relations this module names (the report's short name for each)."""


def cells_differ(mine: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """True for each cell where the two differ beyond the check's tolerance (-inf and -inf,
    or +inf and +inf, are equal)."""
    atol, rtol = tolerance()
    a, b = mine.double(), expected.double()
    same = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=False) | (a == b)
    return ~same


def enough(mine: torch.Tensor, expected: torch.Tensor, parameters: int = 1) -> bool:
    """Whether the two differ on enough cells, and the expected tensor varies enough, for a
    relation with ``parameters`` free numbers to mean anything when it fits."""
    if tuple(mine.shape) != tuple(expected.shape) or mine.numel() < MIN_CELLS:
        return False
    count = int(cells_differ(mine, expected).sum())
    if count < max(MIN_DIFFERING, parameters + 2):
        return False
    finite = expected[expected.isfinite()].double()
    atol, _ = tolerance()
    return finite.numel() >= 2 and float(finite.max() - finite.min()) > atol


def _word(name: str) -> str:
    return {"scaled": "scaled scores", "masked_scores": "masked scores"}.get(name, name)


def by_value(
    mine: torch.Tensor, expected: torch.Tensor, known: Known, factor_name: FactorName
) -> Relation | None:
    """The relation this module finds between the learner's tensor and the expected one,
    both of the same shape, or None. ``factor_name`` names a constant factor in words."""
    if not enough(mine, expected):
        return None
    found = _transposed_scaled(mine, expected, known, factor_name)
    if found is None:
        found = _masked_region(mine, expected, known)
    if found is None:
        found = _missing_term(mine, expected, known)
    if found is None:
        found = _right_on_region(mine, expected, known)
    return found


def _right_on_region(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> Relation | None:
    """Right on one region a tile, a window or a mask makes, and wrong on every other entry."""
    if mine.dim() < 2 or mine.shape[-2] < 2 or mine.shape[-1] < 2:
        return None
    right = _one_region(~cells_differ(mine, expected))
    if right is None or not bool(right.any()):
        return None
    words = region_words(right)
    if words is None:
        return None
    shown = expected.double().reshape(-1, *right.shape)[:, right]
    shown = shown[shown.isfinite()]
    atol, _ = tolerance()
    if shown.numel() < MIN_DIFFERING or float(shown.max() - shown.min()) <= atol:
        return None  # right only where both are 0 or -inf (a mask's cells): that says nothing
    return (
        "right-on-region",
        f"your {known.stage} tensor equals the expected one {words.removesuffix(' only')} and "
        "differs on every other entry: look for a loop, a slice or a mask that covers only "
        "that region",
    )


# Transposed and scaled -------------------------------------------------------------------


def _transposed_scaled(
    mine: torch.Tensor, expected: torch.Tensor, known: Known, factor_name: FactorName
) -> Relation | None:
    if mine.dim() < 2 or mine.shape[-1] != mine.shape[-2] or mine.shape[-1] < 2:
        return None
    turned = mine.mT
    if not cells_differ(turned, expected).any():
        return None  # plainly transposed: relations names it
    name = factor_name(turned, expected)
    if name is None:
        return None  # an unnamed factor on top of a transpose: say nothing rather than guess
    return (
        "transposed-scaled",
        f"your {known.stage} tensor is the expected one transposed (rows and columns swapped, "
        f"queries where keys belong) and times {name}: look at the order of the indices "
        "(einsum letters, .T) and at what you divide or multiply by",
    )


# Masks on a region -------------------------------------------------------------------------


def region_words(region: torch.Tensor) -> str | None:
    """A (query, key) region in words, when it is one a mask makes."""
    if region.dim() != 2 or not bool(region.any()):
        return None
    rows, columns = region.shape
    i = torch.arange(rows)[:, None]
    j = torch.arange(columns)[None, :]
    if rows == columns and rows >= 2:
        shapes: list[tuple[torch.Tensor, str]] = [
            (j > i, "above the diagonal (each query's later keys)"),
            (j < i, "below the diagonal (each query's earlier keys)"),
            (j == i, "on the diagonal (each query's own key)"),
            (j >= i, "on and above the diagonal (each query's own and later keys)"),
            (j <= i, "on and below the diagonal (each query's own and earlier keys)"),
        ]
        for tile in range(2, rows):
            same_tile = (i // tile) == (j // tile)
            shapes.append(
                (
                    (j > i) & same_tile,
                    f"above the diagonal inside the diagonal tiles ({tile}×{tile}: "
                    "a tile's queries and its own keys)",
                )
            )
            shapes.append(
                ((j > i) & ~same_tile, f"above the diagonal outside the diagonal tiles of {tile}")
            )
        for window in range(1, rows - 1):
            shapes.append(
                (
                    j <= i - window,
                    f"outside the sliding window (the keys {window} or more positions "
                    f"before their query; the window holds {window})",
                )
            )
            shapes.append(
                (
                    (j > i) | (j <= i - window),
                    f"above the diagonal and outside the sliding window of {window}",
                )
            )
            shapes.append(
                (
                    (j <= i) & (j > i - window),
                    f"inside the sliding window of {window} (each query's last {window} keys)",
                )
            )
        for shape, words in shapes:
            if torch.equal(region, shape):
                return words
    for count in range(2, rows - 1):  # row 0 alone is often right by itself (angle 0, one key)
        if torch.equal(region, (i < count).expand(rows, columns)):
            return f"on the first {count} rows (0 to {count - 1}) only"
    whole = region.all(0)
    if bool(whole.any()) and torch.equal(region, whole.expand_as(region)):
        keys = [int(k) for k in whole.nonzero().flatten()]
        return (
            f"on key{'s' if len(keys) > 1 else ''} {', '.join(map(str, keys[:8]))} for every query"
        )
    return None


def _pairs(region: torch.Tensor) -> str:
    pairs = [tuple(int(x) for x in p) for p in region.nonzero()[:4]]
    more = " ..." if int(region.sum()) > 4 else ""
    return ", ".join(f"query {p[0]} → key {p[1]}" for p in pairs) + more


def _one_region(mask: torch.Tensor) -> torch.Tensor | None:
    """The (query, key) region of a mask over (..., query, key), when every head's is the same."""
    flat = mask.reshape(-1, *mask.shape[-2:])
    first = flat[0]
    if any(not torch.equal(first, other) for other in flat[1:]):
        return None
    return first


def _say_regions(stage: str, unmasked: torch.Tensor, masked: torch.Tensor, what: str) -> Relation:
    left = bool(unmasked.any())
    put = bool(masked.any())
    unmasked_words = region_words(unmasked) if left else None
    masked_words = region_words(masked) if put else None
    if left and not put:
        where = unmasked_words or f"at {_pairs(unmasked)}"
        return (
            "unmasked-region",
            f"your {stage} tensor is {what} without the mask {where}: those keys are hidden from "
            "their queries in the reference and yours lets them through",
        )
    if put and not left:
        where = masked_words or f"at {_pairs(masked)}"
        return (
            "masked-region",
            f"your {stage} tensor is {what} with a mask {where} that the reference does not have: "
            "those keys should stay visible",
        )
    return (
        "masked-region",
        f"your {stage} tensor is {what} masked {masked_words or 'at ' + _pairs(masked)} instead of "
        f"{unmasked_words or 'at ' + _pairs(unmasked)}: the mask covers the wrong region",
    )


def _softmax_masked(logits: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits.double().masked_fill(hidden, float("-inf")), dim=-1).nan_to_num(0.0)


def _masked_region(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> Relation | None:
    """Scores with -inf on another region than the reference's, or weights that are the
    softmax of a reference tensor masked on another region."""
    if mine.dim() < 2 or mine.shape[-1] < 2 or mine.shape[-2] < 2:
        return None
    mine_hidden, expected_hidden = mine.isneginf(), expected.isneginf()
    if bool(expected_hidden.any()) or bool(mine_hidden.any()):
        if torch.equal(mine_hidden, expected_hidden):
            return None
        visible = ~(mine_hidden | expected_hidden)
        if not close(mine[visible], expected[visible]):
            return None
        if not bool(mine[~mine_hidden].isfinite().all()):
            return None
        if not bool(expected[~expected_hidden].isfinite().all()):
            return None
        unmasked = _one_region(expected_hidden & ~mine_hidden)
        masked = _one_region(mine_hidden & ~expected_hidden)
        if unmasked is None or masked is None:
            return None
        return _say_regions(known.stage, unmasked, masked, "the expected one")
    # Weights: zeros where a mask hid a key.
    if bool((mine < 0).any()) or bool((expected < 0).any()):
        return None
    mine_zero, expected_zero = mine == 0, expected == 0
    if torch.equal(mine_zero, expected_zero):
        return None
    for name, logits in known.tensors.items():
        if tuple(logits.shape) != tuple(mine.shape) or name == known.stage:
            continue
        if close(logits, expected) or bool(logits.isnan().any()):
            continue
        if not close(_softmax_masked(logits, expected_zero), expected):
            continue
        if not close(_softmax_masked(logits, mine_zero), mine):
            continue
        unmasked = _one_region(expected_zero & ~mine_zero)
        masked = _one_region(mine_zero & ~expected_zero)
        if unmasked is None or masked is None:
            return None
        return _say_regions(known.stage, unmasked, masked, f"the softmax of the {_word(name)}")
    return None


# One additive term --------------------------------------------------------------------------


def _scale(value: float | str, tensors: dict[str, torch.Tensor]) -> torch.Tensor | None:
    if isinstance(value, (int, float)):
        return torch.tensor(float(value), dtype=torch.float64)
    found = tensors.get(value)
    return found.double() if found is not None and found.numel() == 1 else None


def _equation_terms(
    known: Known, expected: torch.Tensor
) -> Iterator[tuple[str, torch.Tensor, str]]:
    """(term in words, its value, the equation) for each additive term of the stage's
    declared equations whose result is the expected tensor."""
    tensors = known.tensors
    for equation in known.equations:
        formula = equation_formula(equation) or ""
        if isinstance(equation, (Sum, Difference)):
            result, first = tensors.get(equation.result), tensors.get(equation.a)
            weight = _scale(equation.weight, tensors)
            second = (
                tensors[equation.b].double()
                if isinstance(equation.b, str) and equation.b in tensors
                else _scale(equation.b, tensors)
            )
            if result is None or first is None or weight is None or second is None:
                continue
            if not close(result, expected):
                continue
            sign = 1.0 if isinstance(equation, Sum) else -1.0
            weight_words = "" if equation.weight == 1 else f"{equation.weight} × "
            b_words = equation.b if isinstance(equation.b, str) else f"{equation.b:g}"
            yield equation.a, first.double(), formula
            yield (
                f"{'+' if sign > 0 else '−'} {weight_words}{b_words}",
                sign * weight * second,
                formula,
            )
        elif isinstance(equation, AddBias):
            result, x = tensors.get(equation.result), tensors.get(equation.x)
            bias = tensors.get(equation.bias)
            if result is None or x is None or bias is None or not close(result, expected):
                continue
            yield equation.x, x.double(), formula
            yield equation.bias, bias.double(), formula


def _broadcast(term: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor | None:
    """``term`` broadcast to ``shape``; a vector of one number per row stands as a column
    (``D`` in ``P ∘ D``: one number per query), as torch broadcasts ``D[:, None]``."""
    if term.dim() == 1 and len(shape) >= 2 and term.shape[0] == shape[-2]:
        term = term[:, None]
    try:
        return term.expand(shape)
    except RuntimeError:
        return None


def _product_terms(known: Known, shape: tuple[int, ...]) -> Iterator[tuple[str, torch.Tensor]]:
    """Products of two reference tensors with the stage's shape: elementwise (``P ∘ D``, a
    vector broadcast along the rows) and matrix (``A B``, ``A Bᵀ``, ``Aᵀ B``)."""
    tensors = [
        (name, tensor.double())
        for name, tensor in known.tensors.items()
        if tensor.numel() <= MAX_TERM_CELLS and tensor.dim() <= 2 and bool(tensor.isfinite().all())
    ][:MAX_TERMS]
    for a_name, a in tensors:
        for b_name, b in tensors:
            if a.dim() == 2 and tuple(a.shape) == shape and b_name != a_name:
                other = _broadcast(b, shape)
                if other is not None and (b.dim() < 2 or a_name < b_name):
                    yield f"{a_name} ∘ {b_name}", a * other
            if a.dim() == 2 and b.dim() == 2 and len(shape) == 2:
                if a.shape[1] == b.shape[0] and (a.shape[0], b.shape[1]) == shape:
                    yield f"{a_name} {b_name}", a @ b
                if a.shape[1] == b.shape[1] and (a.shape[0], b.shape[0]) == shape:
                    yield f"{a_name} {b_name}ᵀ", a @ b.T
                if a.shape[0] == b.shape[0] and (a.shape[1], b.shape[1]) == shape:
                    yield f"{a_name}ᵀ {b_name}", a.T @ b


def _missing_term(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> Relation | None:
    shape = tuple(mine.shape)
    if not bool(mine.isfinite().all()) or not bool(expected.isfinite().all()):
        return None
    difference = mine.double() - expected.double()
    differs = cells_differ(mine, expected)
    for words, term, formula in _equation_terms(known, expected):
        full = _broadcast(term, shape)
        if full is None or not bool((full[differs].abs() > 0).all()):
            continue
        if close(difference, -full):
            return (
                "missing-term",
                f"your {known.stage} tensor is the expected one without its term `{words}`: "
                f"{formula}, and that term was left out",
            )
    if len(shape) > 2:
        return None
    for tried, (words, term) in enumerate(_product_terms(known, shape)):
        if tried >= MAX_PRODUCTS:
            break
        if not bool((term[differs].abs() > 0).all()):
            continue
        for sign, plus, adds, subtracts in (
            (-1.0, "minus", "adds", "subtracts"),
            (1.0, "plus", "subtracts", "adds"),
        ):
            if close(difference, sign * term):
                return (
                    "missing-term",
                    f"your {known.stage} tensor is the expected one {plus} {words} (the "
                    f"reference's own tensors): where the formula {adds} {words}, your code "
                    f"does not, or it {subtracts} {words} where nothing belongs",
                )
    return None


# Blocks in another order -------------------------------------------------------------------


def block_order(order: Sequence[int]) -> tuple[int, list[int]] | None:
    """(block size, the expected block each of yours holds) when a reordering of rows moves
    whole aligned blocks of two or more rows and keeps each block's rows in order."""
    count = len(order)
    for size in range(2, count // 2 + 1):
        if count % size:
            continue
        starts = order[::size]
        if any(s % size for s in starts):
            continue
        if all(order[k] == starts[k // size] + k % size for k in range(count)):
            blocks = [s // size for s in starts]
            if blocks != sorted(blocks):
                return size, blocks
    return None


def blocks_sentence(stage: str, word: str, size: int, blocks: list[int]) -> Relation:
    return (
        "blocks-permuted",
        f"your {stage} tensor holds the expected {word} in blocks of {size}, in another order: "
        f"your blocks {', '.join(map(str, range(len(blocks))))} are the expected "
        f"{', '.join(map(str, blocks))}. The blocks were put together in another order than "
        "the tokens were written in (with a block table, read the blocks in the table's "
        "order, not the pool's)",
    )


# Summed over one tile ----------------------------------------------------------------------


MAX_TILED = 64
"""Longest per-query vector whose tiles' partial sums are recorded and searched."""


def tile_shapes(tensor: torch.Tensor) -> set[tuple[int, ...]]:
    """The shapes of one tile of a per-query vector (``D``): what a learner's loop over tiles
    computes on each pass, recorded so that :func:`one_tile` can add them up."""
    if tensor.dim() != 1 or not tensor.is_floating_point() or tensor.shape[0] > MAX_TILED:
        return set()
    return {s for t in range(2, tensor.shape[0] // 2 + 1) for s in ((t,), (t, 1))}


def one_tile(
    stage: str,
    expected: torch.Tensor,
    records: Sequence[Record],
    formula: str | None,
) -> tuple[int, str] | None:
    """(line, sentence) when the values one line gives on its passes, slices of the expected
    per-query vector (``D``), add up to it: each pass summed over one tile only."""
    vector = expected.reshape(-1).double() if expected.dim() <= 2 else None
    if vector is None or (expected.dim() == 2 and expected.shape[-1] != 1):
        return None
    n = vector.shape[0]
    atol, _ = tolerance()
    if n < 2 or float(vector.abs().max()) <= atol:
        return None
    by_line: dict[int, list[torch.Tensor]] = {}
    for record in records:
        value = record.value
        if record.line is None or value is None or not value.is_floating_point():
            continue
        if value.dim() > 2 or (value.dim() == 2 and value.shape[-1] != 1) or value.numel() >= n:
            continue
        by_line.setdefault(record.line, []).append(value.reshape(-1).double())
    for line, values in by_line.items():
        tile = values[0].numel()
        if tile < 1:
            continue
        query_tiles = -(-n // tile)
        sizes = [min(tile, n - q * tile) for q in range(query_tiles)]
        if len(values) % query_tiles or len(values) < 2 * query_tiles:
            continue
        key_tiles = len(values) // query_tiles
        for outer_keys in (True, False):
            sums = [torch.zeros(size, dtype=torch.float64) for size in sizes]
            fits = True
            for m, value in enumerate(values):
                q = m % query_tiles if outer_keys else m // key_tiles
                if value.numel() != sizes[q]:
                    fits = False
                    break
                sums[q] = sums[q] + value
            if not fits or not close(torch.cat(sums), vector):
                continue
            starts = [sum(sizes[:q]) for q in range(query_tiles)]
            partial = [
                not close(value, vector[starts[q] : starts[q] + sizes[q]])
                for m, value in enumerate(values)
                for q in [m % query_tiles if outer_keys else m // key_tiles]
            ]
            if sum(partial) < MIN_DIFFERING:
                continue  # the passes give the whole vector already: not partial sums
            how = f" ({formula})" if formula else ""
            return (
                line,
                f"on each pass this line gives {stage} for one tile of {tile} queries, summed "
                f"over one tile only: the values of its {key_tiles} passes over the same "
                f"queries add up to the expected {stage}. {stage} needs the whole row, every "
                f"key{how}: compute it once, before the loop over the tiles",
            )
    return None
