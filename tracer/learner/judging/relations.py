"""What the numbers show when no catalogued mistake explains a divergence.

At the first stage where the learner's tensor differs from the reference's, the
two are related by value: equal up to a constant factor (and which one), equal
transposed, with rows, columns or heads permuted or reversed, normalised over
the other axis, scaled row by row or column by column (a sum without
``keepdims`` broadcast the wrong way), off by exactly one tensor the check
knows (a query's own value vector, the mask, each row's maximum), equal except
on masked positions, equal for some heads only, or the heads split another
way. The relation is said in the learner's terms; when none holds, the
sentence still says where the numbers differ (which rows, which entries) and
by how much, never only that nothing was recognised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tracer.learner.judging.by_value import (
    TITLES,
    block_order,
    blocks_sentence,
    by_value,
    enough,
)
from tracer.learner.judging.compare import cell_gaps, close
from tracer.learner.judging.diagnosis import Diagnosis, at_line
from tracer.learner.sandbox.recorder import CREATION_OPS

TOLERANCE = 1e-4
MAX_PERMUTED = 64
"""Longest axis searched for a reordering (the search compares every pair of slices)."""
MAX_ROWS = 8
"""Wrong rows of a row-by-row output traced back to the operation that made them."""


@dataclass(frozen=True)
class Known:
    """What the relations are measured against."""

    stage: str
    """The name of the stage where the learner's tensor diverges (``weights``, ``context``)."""
    expected: torch.Tensor
    tensors: dict[str, torch.Tensor]
    """Every floating reference tensor by name (``values``, ``scaled``, ``queries``...)."""
    hidden: torch.Tensor | None
    """(query, key) pairs the reference hides (True), if it hides any."""
    heads: int
    head_dim: int
    tokens: int
    equations: tuple[object, ...] = ()
    """What the diverging stage declares it computed (``Sum``, ``Difference``, ``AddBias``...)."""


WORDS = {"scaled": "scaled scores", "masked_scores": "masked scores", "softmax": "softmax"}


def _word(name: str) -> str:
    """A reference tensor's name as a sentence says it."""
    return WORDS.get(name, name)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return tuple(a.shape) == tuple(b.shape) and close(a, b)


def _factor_name(factor: float, known: Known) -> str | None:
    """Which constant a factor is, in a learner's words."""
    d = known.head_dim
    n = known.tokens
    names: list[tuple[float, str]] = []
    if d > 1:
        names += [
            (math.sqrt(d), f"√d_k = √{d}"),
            (1 / math.sqrt(d), f"1/√d_k = 1/√{d}"),
            (float(d), f"d_k = {d}"),
            (1 / d, f"1/d_k = 1/{d}"),
        ]
    if known.heads > 1:
        names += [
            (float(known.heads), f"the number of heads ({known.heads})"),
            (1 / known.heads, f"1/(the number of heads) = 1/{known.heads}"),
        ]
    if n > 1:
        names += [
            (float(n), f"the number of tokens (or cache length, {n})"),
            (1 / n, f"1/(the number of tokens) = 1/{n}: a mean where a sum belongs"),
            (math.sqrt(n), f"√(the number of tokens) = √{n}"),
            (1 / math.sqrt(n), f"1/√(the number of tokens) = 1/√{n}"),
        ]
    names += [(2.0, "2"), (0.5, "1/2")]  # after the sizes: with d_k = 4, 2 is √d_k
    for value, name in names:
        if abs(factor - value) <= 1e-4 * max(1.0, abs(value)):
            return name
    return None


def _named_factor(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> str | None:
    """The constant ``mine`` is ``expected`` times, in words, when the check can name it."""
    factor = _constant_factor(mine, expected)
    return None if factor is None else _factor_name(factor, known)


def _constant_factor(mine: torch.Tensor, expected: torch.Tensor) -> float | None:
    usable = (expected.abs() > 1e-6) & mine.isfinite()
    if not bool(usable.any()) or bool((mine[~usable].abs() > 1e-6).any()):
        return None
    ratios = mine[usable].double() / expected[usable].double()
    factor = float(ratios.median())
    if abs(factor - 1) < 1e-6 or factor == 0:
        return None
    return factor if _same(mine, expected * factor) else None


def _additive_log_ratio(
    mine: torch.Tensor, expected: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(row, column) factors u, v with mine = expected * u_i * v_j, if the entries fit."""
    if mine.dim() != 2 or tuple(mine.shape) != tuple(expected.shape):
        return None
    usable = (expected.abs() > 1e-6) & (mine.abs() > 1e-9)
    if not bool(usable.any()) or bool((mine[expected.abs() <= 1e-6].abs() > 1e-6).any()):
        return None
    if bool(((mine[usable] > 0) != (expected[usable] > 0)).any()):
        return None
    logs = torch.zeros(mine.shape, dtype=torch.float64)
    logs[usable] = (mine[usable].double().abs() / expected[usable].double().abs()).log()
    rows = torch.zeros(mine.shape[0], dtype=torch.float64)
    columns = torch.zeros(mine.shape[1], dtype=torch.float64)
    weight = usable.double()
    for _ in range(20):  # alternating least squares on log(mine / expected) = a_i + b_j
        rows = ((logs - columns) * weight).sum(1) / weight.sum(1).clamp(min=1)
        columns = ((logs - rows[:, None]) * weight).sum(0) / weight.sum(0).clamp(min=1)
    fitted = expected.double() * torch.exp(rows[:, None] + columns[None, :])
    if not _same(mine.double(), fitted):
        return None
    return rows.exp(), columns.exp()


def _constant(values: torch.Tensor) -> bool:
    return bool(
        (values - values.mean()).abs().max() <= TOLERANCE * max(1.0, float(values.abs().max()))
    )


def _permutation(mine: torch.Tensor, expected: torch.Tensor, axis: int) -> list[int] | None:
    """Where each of ``mine``'s slices along ``axis`` sits in ``expected``, if it is a reordering."""
    count = expected.shape[axis]
    if count > MAX_PERMUTED:
        return None
    order = []
    for i in range(count):
        slice_ = mine.select(axis, i)
        found = next(
            (j for j in range(count) if j not in order and close(slice_, expected.select(axis, j))),
            None,
        )
        if found is None:
            return None
        order.append(found)
    return None if order == list(range(count)) else order


def _rows_word(axis: int, dims: int, stage: str) -> str:
    if dims == 3 and axis == 0:
        return "heads"
    if stage in ("weights", "scores", "scaled", "masked_scores", "renormalized"):
        return "query rows" if axis == dims - 2 else "key columns"
    return "rows (tokens)" if axis == dims - 2 else "columns (features)"


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str) -> torch.Tensor:
    """Rotary embedding of ``x`` (tokens, d) by per-token, per-pair cos and sin (tokens, d/2)."""
    half = x.shape[-1] // 2
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def _opposite_rotation(mine: torch.Tensor, known: Known) -> tuple[str, str] | None:
    """Rotary queries or keys turned by −mθ instead of mθ (the sine's sign swapped): found
    when turning the reference's own queries or keys by +mθ, with its own cos and sin tables,
    gives the expected rotated tensor, and by −mθ gives the learner's."""
    cos, sin = known.tensors.get("cos"), known.tensors.get("sin")
    if cos is None or sin is None or mine.dim() != 2 or mine.shape[-1] % 2:
        return None
    if tuple(cos.shape) != (mine.shape[0], mine.shape[-1] // 2) or cos.shape != sin.shape:
        return None
    cos, sin = cos.double(), sin.double()
    targets = [
        (name, known.tensors[name].double())
        for name in ("rotated_queries", "rotated_keys")
        if name in known.tensors and known.tensors[name].shape == mine.shape
    ]
    for source in ("queries", "keys"):
        x = known.tensors.get(source)
        if x is None or x.shape != mine.shape:
            continue
        x = x.double()
        for pairing in ("interleaved", "half"):
            if not any(_same(_rotate(x, cos, sin, pairing), t) for _, t in targets):
                continue
            if _same(mine, _rotate(x, cos, -sin, pairing)) and not _same(mine, x):
                return (
                    "opposite-rotation",
                    f"your rotated {source} are turned the other way, by −mθ instead of mθ: "
                    "the sine terms have the wrong sign (x_a cos − x_b sin goes first, then "
                    "x_a sin + x_b cos)",
                )
    return None


def relate(mine: torch.Tensor, known: Known) -> tuple[str, str] | None:
    """(code, sentence): how the learner's tensor relates to the reference's, if it does."""
    expected = known.expected
    stage = known.stage
    if tuple(mine.shape) != tuple(expected.shape):
        return _other_shape(mine, known)
    mine, expected = mine.double(), expected.double()
    turned = _opposite_rotation(mine, known)
    if turned is not None:
        return turned
    factor = _constant_factor(mine, expected)
    if factor is not None:
        name = _factor_name(factor, known) or f"{factor:.4g}"
        return (
            "scaled-by",
            f"your {stage} tensor is exactly the expected one times {name}: everything else is right, "
            "only a constant factor is off (look at what you divide or multiply by)",
        )
    if mine.dim() >= 2 and mine.shape[-1] == mine.shape[-2] and _same(mine.mT, expected):
        return (
            "transposed",
            f"your {stage} tensor is the expected one transposed: rows and columns swapped "
            "(queries where keys belong)",
        )
    sums = _sums(mine, known)
    if sums is not None:
        return sums
    if mine.dim() >= 2 and mine.shape[-1] % max(known.heads, 1) == 0 and known.heads > 1:
        blocks = _head_blocks(mine, expected, known.heads)
        if blocks is not None:
            return blocks
    for axis in range(mine.dim()):
        order = _permutation(mine, expected, axis)
        if order is None:
            continue
        word = _rows_word(axis, mine.dim(), stage)
        moved = block_order(order)
        if moved is not None and order != list(reversed(range(len(order)))):
            return blocks_sentence(stage, word, *moved)
        if order == list(reversed(range(len(order)))):
            return ("reversed", f"your {stage} tensor holds the expected {word} in reverse order")
        return (
            "permuted",
            f"your {stage} tensor holds the expected {word} in another order: yours "
            f"{', '.join(map(str, range(len(order))))} are the expected {', '.join(map(str, order))}",
        )
    offset = _offset(mine, expected, known)
    if offset is not None:
        return offset
    factors = _additive_log_ratio(mine, expected)
    if factors is not None:
        rows, columns = factors
        scale = rows * columns[0]
        off = [i for i in range(len(scale)) if abs(float(scale[i]) - 1) > 1e-4]
        if _constant(columns) and off and off == list(range(len(off))) and len(off) < len(scale):
            return (
                "padding-attended",
                f"only the first {len(off)} rows of your {stage} tensor are off, each by its own "
                "factor, and the rest are right: those queries' windows reach before the first "
                "token, and the padding there is attended to; mask the padded positions "
                "before the softmax",
            )
        if _constant(columns):
            return (
                "row-factor",
                f"each row of your {stage} tensor is the expected row times its own factor "
                f"({', '.join(f'{float(r * columns[0]):.3g}' for r in rows)}): rows are "
                "normalised by the wrong sum",
            )
        if close(rows * columns, torch.ones_like(rows)):
            return (
                "keepdims",
                f"entry (i, j) of your {stage} is the expected one times s_i/s_j: each row was "
                "divided by another row's sum, a sum taken without keepdims and broadcast along "
                "the wrong axis (keepdims=True, or [:, None])",
            )
        if _constant(rows):
            return (
                "column-factor",
                f"each column of your {stage} is the expected column times its own factor: "
                "something taken per column (a maximum over axis 0, say) did not cancel; "
                "take it per row (over the last axis, keepdims=True)",
            )
        return (
            "row-column-factor",
            f"your {stage} tensor is the expected one times a factor per row and a factor per "
            "column: a per-column quantity (a maximum over the other axis) did not cancel",
        )
    heads = _per_head(mine, expected)
    if heads is not None:
        return heads
    logs = _log_offset(mine, expected, known)
    if logs is not None:
        return logs
    product = _product(mine, known)
    if product is not None:
        return product
    # The relations that need the stage's structure (tracer/learner/by_value.py).
    found = by_value(mine, expected, known, lambda a, b: _named_factor(a, b, known))
    return found if found is not None else _where(mine, expected, known)


WEIGHT_STAGES = ("weights", "renormalized", "dropout")


def _log_offset(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> tuple[str, str] | None:
    """Log-weights off by each row's maximum: a log-sum-exp that lost its ``+ max``."""
    if known.stage not in WEIGHT_STAGES or not bool((mine < 0).any()):
        return None
    logs = expected.log()
    finite = logs.isfinite()
    difference = (mine - logs).masked_fill(~finite, 0.0)
    shift = difference[..., :1]
    if not close(difference.masked_fill(~finite, 0.0), (shift * finite).double()):
        return None
    for name in ("scaled", "scores", "masked_scores"):
        scores = known.tensors.get(name)
        if scores is None or tuple(scores.shape) != tuple(mine.shape):
            continue
        top = scores.double().masked_fill(~scores.isfinite(), float("-inf")).amax(-1, keepdim=True)
        if _same(shift, top) or _same(shift, -top):
            return (
                "row-offset",
                f"your {known.stage} tensor is the log of the expected weights plus each row's "
                f"maximum of the {_word(name)}: the log-sum-exp lost its `+ max` (log-sum-exp = m + "
                "log(sum(exp(x - m))))",
            )
    return None


def _product(mine: torch.Tensor, known: Known) -> tuple[str, str] | None:
    """A context made from the wrong factors: the scores instead of the weights, or the keys
    (queries, inputs) instead of the values."""
    if known.stage not in ("context", "output", "head_context"):
        return None
    tensors = known.tensors
    values = tensors.get("values")
    weights = tensors.get("weights")
    square = [n for n in ("scaled", "scores", "masked_scores", "softmax") if n in tensors]
    if values is not None:
        for name in square:
            tensor = tensors[name].double().nan_to_num(neginf=0.0)
            try:
                made = tensor @ values.double()
            except RuntimeError:
                continue
            if _same(mine, made):
                return (
                    "wrong-factor",
                    f"your {known.stage} tensor is the {_word(name)} times the values: the softmax "
                    "weights were computed but the raw scores were used in their place",
                )
    if weights is not None:
        for factor in ("keys", "queries", "inputs"):
            other = tensors.get(factor)
            if other is None:
                continue
            try:
                made = weights.double() @ other.double()
            except RuntimeError:
                continue
            if _same(mine, made):
                return (
                    "wrong-factor",
                    f"your {known.stage} tensor is the weights times the {factor}: the weights "
                    "must mix the values",
                )
    return None


def _sums(mine: torch.Tensor, known: Known) -> tuple[str, str] | None:
    """Weights that sum to 1 along the wrong axis."""
    if known.stage not in WEIGHT_STAGES or mine.dim() < 2:
        return None
    rows = mine.sum(-1)
    columns = mine.sum(-2)
    ones_rows = close(rows, torch.ones_like(rows))
    ones_columns = close(columns, torch.ones_like(columns))
    if not ones_rows and ones_columns:
        return (
            "other-axis",
            "your weights' columns sum to 1 and their rows do not: the normalisation ran over "
            "the queries (dim=0 / dim=-2) instead of over each query's keys (dim=-1)",
        )
    if mine.dim() == 3 and not ones_rows:
        over_heads = mine.sum(0)
        if close(over_heads, torch.ones_like(over_heads)):
            return (
                "other-axis",
                "your weights sum to 1 across the heads (dim=0), not along each query's keys "
                "(dim=-1): the softmax ran over the heads axis",
            )
    return None


def _offset(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> tuple[str, str] | None:
    """Off by exactly one tensor the check knows."""
    difference = mine - expected
    stage = known.stage
    for name in ("values", "queries", "keys", "inputs", "projected"):
        tensor = known.tensors.get(name)
        if tensor is None or tuple(tensor.shape) != tuple(difference.shape):
            continue
        for sign, word in ((1.0, "plus"), (-1.0, "minus")):
            if _same(difference, sign * tensor.double()):
                own = " (each query's own vector)" if name in ("values", "inputs") else ""
                return (
                    "plus-tensor",
                    f"your {stage} tensor is the expected one {word} the {name}{own}: that term "
                    "does not belong in the sum",
                )
    for name, tensor in known.tensors.items():
        if not name.startswith("b_") or tensor.dim() != 1 or tensor.shape[0] != mine.shape[-1]:
            continue
        if bool((tensor != 0).any()) and _same(difference, -tensor.double().expand_as(mine)):
            return (
                "plus-tensor",
                f"your {stage} tensor is the expected one without the bias {name}: add it after "
                "the output projection",
            )
    hidden = known.hidden
    if hidden is not None and tuple(hidden.shape) == tuple(mine.shape[-2:]) and bool(hidden.any()):
        visible = ~hidden.expand(mine.shape)
        for name, tensor in known.tensors.items():
            if name != "softmax" or tuple(tensor.shape) != tuple(mine.shape):
                continue
            if close(tensor, expected):
                continue
            if close(mine[visible], tensor.double()[visible]) and _constant(mine[~visible]):
                return (
                    "masked-after",
                    f"on the visible positions your {stage} tensor is the softmax of the "
                    f"unmasked scores, and the masked positions hold "
                    f"{float(mine[~visible][0]):.3g}: the mask came after the softmax; mask the "
                    "scores before it",
                )
        differs = ~torch.isclose(mine, expected, rtol=1e-4, atol=1e-5, equal_nan=False)
        differs &= ~(mine.isinf() & expected.isinf() & (mine.sign() == expected.sign()))
        if bool(differs.any()) and not bool((differs & ~hidden).any()):
            if bool(expected[differs].isneginf().all()):
                pairs = [tuple(int(i) for i in p) for p in differs.nonzero()[:4]]
                ahead = all(p[-1] > p[-2] for p in pairs)
                shown = ", ".join(f"query {p[-2]} → key {p[-1]}" for p in pairs)
                return (
                    "masked-only",
                    f"your {stage} tensor equals the expected one except where the reference "
                    f"hides a key and yours does not ({shown}): your mask lets "
                    f"{'queries see keys after them' if ahead else 'those pairs through'}",
                )
            shown_values = mine[differs]
            value = f" (they hold {float(shown_values[0]):.3g})" if _constant(shown_values) else ""
            return (
                "masked-only",
                f"your {stage} tensor equals the expected one everywhere except the masked "
                f"positions, which should be 0{value}: the mask is applied after the softmax, "
                "or the masked entries are not cleared",
            )
    if difference.dim() >= 1:
        per_row = difference - difference[..., :1]
        if close(per_row, torch.zeros_like(per_row)) and not close(difference, 0 * difference):
            shift = difference[..., 0]
            for name in ("scaled", "scores", "masked_scores"):
                scores = known.tensors.get(name)
                if scores is None or tuple(scores.shape[:-1]) != tuple(shift.shape):
                    continue
                top = scores.double().masked_fill(~scores.isfinite(), float("-inf")).amax(-1)
                if _same(shift, -top):
                    return (
                        "row-offset",
                        f"each row of your {stage} tensor is the expected row minus that row's maximum "
                        f"of the {_word(name)}: the maximum subtracted for stability was not added back "
                        "(log-sum-exp = max + log(sum(exp(x - max))))",
                    )
            return (
                "row-offset",
                f"each row of your {stage} tensor is the expected row shifted by a constant of its own "
                f"({', '.join(f'{float(s):.3g}' for s in shift.flatten()[:6])}): something "
                "added per row does not belong",
            )
    return None


def _head_blocks(mine: torch.Tensor, expected: torch.Tensor, heads: int) -> tuple[str, str] | None:
    """Concatenated heads in another order: column blocks permuted."""
    width = mine.shape[-1] // heads
    mine_blocks = torch.stack(torch.split(mine, width, dim=-1))
    expected_blocks = torch.stack(torch.split(expected, width, dim=-1))
    order = _permutation(mine_blocks, expected_blocks, 0)
    if order is None:
        return None
    if order == list(reversed(range(heads))):
        return (
            "reversed",
            "your columns hold the expected heads' blocks in reverse order: the heads were "
            "concatenated last to first",
        )
    return (
        "permuted",
        f"your columns hold the expected heads' blocks in another order ({order}): concatenate "
        "head 0's output first, then head 1's, ...",
    )


def _per_head(mine: torch.Tensor, expected: torch.Tensor) -> tuple[str, str] | None:
    if mine.dim() != 3 or mine.shape[0] < 2:
        return None
    right = [h for h in range(mine.shape[0]) if close(mine[h], expected[h])]
    if not right or len(right) == mine.shape[0]:
        return None
    wrong = [h for h in range(mine.shape[0]) if h not in right]
    return (
        "some-heads",
        f"head{'s' if len(right) > 1 else ''} {', '.join(map(str, right))} "
        f"{'are' if len(right) > 1 else 'is'} right and head{'s' if len(wrong) > 1 else ''} "
        f"{', '.join(map(str, wrong))} not: something in your code uses one head's slice "
        "(often head 0's keys or values) for every head",
    )


def _other_shape(mine: torch.Tensor, known: Known) -> tuple[str, str] | None:
    expected = known.expected
    shape = "×".join(map(str, mine.shape))
    wanted = "×".join(map(str, expected.shape))
    if mine.numel() == expected.numel() * expected.shape[-2] and mine.dim() == expected.dim() + 1:
        return (
            "broadcast",
            f"your {known.stage} tensor is {shape}, not {wanted}: a reduction lost its axis (no "
            "keepdims) and the next operation broadcast it into an extra dimension",
        )
    if mine.dim() == expected.dim() and sorted(mine.shape) == sorted(expected.shape):
        return (
            "shape",
            f"your {known.stage} tensor is {shape} where {wanted} is expected: the axes are in "
            "another order (a transpose or permute too many, or too few)",
        )
    return (
        "shape",
        f"your {known.stage} tensor is {shape} where {wanted} is expected: follow the shapes "
        "back from there to the operation that made it",
    )


def _where(mine: torch.Tensor, expected: torch.Tensor, known: Known) -> tuple[str, str]:
    """No relation: where and by how much the numbers differ."""
    differs = ~torch.isclose(mine, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    count, total = int(differs.sum()), differs.numel()
    gap = cell_gaps(mine, expected)
    if bool(differs.any()):  # the largest gap among the cells that differ, never an equal one
        gap = gap.masked_fill(~differs, -1.0)
    position = tuple(int(i) for i in torch.unravel_index(gap.argmax(), gap.shape))
    text = (
        f"{count} of the {total} entries of your {known.stage} differ; the largest gap is at "
        f"{position} ({_pair(float(mine[position]), float(expected[position]))})"
    )
    if mine.dim() >= 2:
        rows = differs.flatten(0, -2).any(-1)
        right = [i for i in range(rows.shape[0]) if not bool(rows[i])]
        if right and len(right) < rows.shape[0]:
            text += f"; rows {', '.join(map(str, right[:8]))} are right"
    return "differs", text + "."


def _pair(mine: float, expected: float) -> str:
    """``yours A, expected B`` with as many digits as tell the two apart (at most 8)."""
    for digits in range(4, 9):
        a, b = f"{mine:.{digits}g}", f"{expected:.{digits}g}"
        if a != b:
            break
    return f"yours {a}, expected {b}"


WEAK = ("differs", "row-factor", "row-column-factor", "right-on-region")
"""Relations a later tensor may explain better (unnormalised exponentials are a row factor)."""


def explain_first(
    candidates: Sequence[tuple[torch.Tensor, int | None]], known: Known
) -> Diagnosis | None:
    """The clearest relation among the learner's tries at the stage, in the order they ran."""
    found = [explain(mine, known, line) for mine, line in candidates]
    usable = [d for d in found if d is not None]
    for diagnosis in usable:
        if diagnosis.code not in WEAK:
            return diagnosis
    for diagnosis in usable:
        if diagnosis.code != "differs":
            return diagnosis
    return usable[0] if usable else None


UNGUARDED = ("differs", "shape", "broadcast")
"""Relations of shape, or no relation: nothing in them may fit by chance."""


def _parameters(code: str, mine: torch.Tensor) -> int:
    """How many free numbers a relation fits: a factor per row fits any tensor of one column."""
    rows = mine.shape[:-1].numel() if mine.dim() >= 1 else 1
    columns = mine.shape[-1] if mine.dim() >= 1 else 1
    return {
        "row-factor": rows,
        "row-offset": rows,
        "padding-attended": rows,
        "column-factor": columns,
        "row-column-factor": rows + columns,
        "keepdims": rows + columns,
    }.get(code, 1)


def explain(mine: torch.Tensor | None, known: Known, line: int | None) -> Diagnosis | None:
    """A diagnosis from the relation of the learner's tensor to the reference's."""
    if mine is None or not mine.is_floating_point():
        return None
    try:
        found = relate(mine, known)
    except (RuntimeError, ValueError, IndexError):  # shapes a relation does not apply to
        return None
    if found is None:
        return None
    code, sentence = found
    if code not in UNGUARDED and not enough(mine, known.expected, _parameters(code, mine)):
        # Too few differing cells, or a constant expected tensor: the relation may fit by
        # chance, so only where the numbers differ is said.
        code, sentence = _where(mine.double(), known.expected.double(), known)
    titles = {
        "scaled-by": "off by a constant factor",
        "transposed": "transposed",
        "reversed": "in reverse order",
        "permuted": "in another order",
        "other-axis": "normalised over the wrong axis",
        "row-factor": "each row scaled by its own factor",
        "keepdims": "a sum without keepdims",
        "column-factor": "each column scaled by its own factor",
        "row-column-factor": "scaled per row and per column",
        "plus-tensor": "one extra term",
        "masked-only": "wrong only at masked positions",
        "masked-after": "the mask applied after the softmax",
        "padding-attended": "padding attended to",
        "row-offset": "each row shifted",
        "some-heads": "right for some heads only",
        "broadcast": "an extra broadcast dimension",
        "shape": "axes in another order",
        "head-split": "heads split the other way",
        "opposite-rotation": "rotated the opposite way",
        "differs": "what differs",
        "wrong-factor": "the wrong tensor in a product",
        **TITLES,
    }
    return Diagnosis(code, titles.get(code, code), line, f"{at_line(line)}: {sentence}")


def stuck_head(
    records: Sequence[tuple[torch.Tensor, int | None, int]],
    tensors: dict[str, torch.Tensor],
    heads: int,
) -> Diagnosis | None:
    """A per-head loop whose line gives head 0's slice on every pass (``K[:, 0:hd]``).

    ``records`` are (value, line, index) in the order they ran.
    """
    for name in ("keys", "values", "queries", "split"):
        tensor = tensors.get(name)
        if tensor is None or tensor.dim() != 3 or tensor.shape[0] != heads:
            continue
        first = tensor[0]
        if any(close(first, tensor[h]) for h in range(1, heads)):
            continue
        by_line: dict[int, list[torch.Tensor]] = {}
        for value, line, _ in records:
            if line is not None and tuple(value.shape) == tuple(first.shape):
                by_line.setdefault(line, []).append(value)
        for line, values in by_line.items():
            if len(values) >= heads and all(close(v, first) for v in values[:heads]):
                return Diagnosis(
                    "some-heads",
                    "every head uses head 0's slice",
                    line,
                    f"{at_line(line)}: on each of its {len(values)} passes this line gives "
                    f"head 0's {name}; head h's are the columns h·d_head to (h+1)·d_head: "
                    "slice with the loop's head index",
                )
    return None


def head_splits(
    mine: torch.Tensor, projected: Sequence[torch.Tensor], heads: int, line: int | None
) -> Diagnosis | None:
    """A per-head tensor equal to a projection split as view(T, head_dim, heads)."""
    for tensor in projected:
        if tensor.dim() != 2 or tensor.shape[-1] % heads:
            continue
        tokens, width = tensor.shape
        size = width // heads
        interleaved = tensor.reshape(tokens, size, heads).permute(2, 0, 1)
        blocks = tensor.reshape(tokens, heads, size).transpose(0, 1)
        if close(interleaved, blocks):
            continue  # one column per head: both splits are the same
        if tuple(mine.shape) == tuple(interleaved.shape) and close(mine, interleaved):
            return Diagnosis(
                "head-split",
                "heads split the other way",
                line,
                f"{at_line(line)}: each of your heads takes every {heads}th column of the "
                f"projection, as view(T, {size}, {heads}) splits it; a head is a block of "
                f"{size} neighbouring columns: view(T, {heads}, {size}).transpose(0, 1)",
            )
    return None


def _attend(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float
) -> torch.Tensor:
    if keys.shape[0] == 0:
        return torch.zeros(values.shape[-1], dtype=torch.float64)
    return torch.softmax(keys @ q * scale, dim=-1) @ values


def loop_rows(
    mine: torch.Tensor,
    expected: torch.Tensor,
    records: Sequence[tuple[torch.Tensor, int | None, str, int]],
    arguments: dict[str, torch.Tensor],
) -> Diagnosis | None:
    """The first wrong row of an output computed one token at a time (decode steps, a loop
    over queries): the line and the pass of its loop that made it, and what that row is.

    ``records`` are the learner's (value, line, op, index) in the order they ran.
    """
    if mine.dim() != 2 or tuple(mine.shape) != tuple(expected.shape):
        return None
    width = mine.shape[-1]
    wrong = [t for t in range(mine.shape[0]) if not close(mine[t], expected[t])]
    if not wrong:
        return None
    rows = [
        (v.reshape(-1), line, op, index) for v, line, op, index in records if v.numel() == width
    ]
    made: list[tuple[int, int | None, str, int]] = []
    for t in wrong[:MAX_ROWS]:
        producer = next(  # the last tensor equal to the row made it (a v_0 made earlier did not)
            ((line, op, index) for v, line, op, index in reversed(rows) if close(v, mine[t])),
            None,
        )
        if producer is not None:
            made.append((t, *producer))
            if producer[1] not in CREATION_OPS:
                break
    if not made:
        return None
    t, line, op, index = next((m for m in made if m[2] not in CREATION_OPS), made[0])
    passes = [i for _, at, o, i in rows if at == line and o == op]
    step = passes.index(index) if index in passes else 0
    where = (
        f"{at_line(line)}, pass {step} of its loop (token {t})"
        if len(passes) > 1
        else (f"{at_line(line)} (token {t})")
    )
    right = ""
    if t > 0 and all(w >= t for w in wrong):
        right = "row 0 is right; " if t == 1 else f"rows 0 to {t - 1} are right; "
    found = _row_relation(mine[t].double(), t, arguments)
    if found is not None:
        code, sentence = found
        return Diagnosis(code, ROW_TITLES[code], line, f"{where}: {right}{sentence}")
    if len(passes) < 2:
        return None
    shown = ", ".join(f"{float(x):.4g}" for x in mine[t][:4])
    wanted = ", ".join(f"{float(x):.4g}" for x in expected[t][:4])
    return Diagnosis(
        "loop-step",
        "wrong from one pass of a loop",
        line,
        f"{where}: {right}this pass gives [{shown}] where [{wanted}] is expected; step "
        "through that pass",
    )


ROW_TITLES = {
    "cache-before-append": "attending before appending to the cache",
    "scaled-by": "off by a constant factor",
}


def _row_relation(
    row: torch.Tensor, t: int, arguments: dict[str, torch.Tensor]
) -> tuple[str, str] | None:
    names = ("inputs", "W_query", "W_key", "W_value")
    if any(n not in arguments or arguments[n].dim() != 2 for n in names):
        return None
    inputs, wq, wk, wv = (arguments[n].double() for n in names)
    queries, keys, values = inputs @ wq, inputs @ wk, inputs @ wv
    d = keys.shape[-1]
    q = queries[t]
    if close(row, _attend(q, keys[:t], values[:t], d**-0.5)):
        return (
            "cache-before-append",
            f"token {t} attended to a cache of {t} key{'s' if t != 1 else ''}, without its own: append the token's "
            "key and value to the cache before attending",
        )
    length = t + 1
    for scale, name in (
        (1 / length, f"the cache length ({length})"),
        (length**-0.5, f"√(the cache length) = √{length}"),
        (1.0, "nothing"),
        (1 / d, f"d_k = {d}"),
    ):
        if abs(scale - d**-0.5) < 1e-12:
            continue
        if close(row, _attend(q, keys[:length], values[:length], scale)):
            return (
                "scaled-by",
                f"its scores were divided by {name}, not by √d_k = √{d}",
            )
    return None


def training_steps(
    records: Sequence[tuple[torch.Tensor, int | None, str, int]], losses: torch.Tensor
) -> Diagnosis | None:
    """The first training step whose loss differs, from the line that computes the loss."""
    by_line: dict[tuple[int, str], list[torch.Tensor]] = {}
    for value, at, op, _ in records:
        if at is not None and value.dim() == 0:
            by_line.setdefault((at, op), []).append(value)
    for (line, _), values in by_line.items():
        if len(values) < 2 or not close(values[0], losses[0]):
            continue
        step = next(
            (k for k, v in enumerate(values[: len(losses)]) if not close(v, losses[k])), None
        )
        if step is None:
            continue
        return Diagnosis(
            "loop-step",
            "wrong from one training step on",
            line,
            f"{at_line(line)}, pass {step} of its loop (training step {step}): the loss is "
            f"{float(values[step]):.6g} where {float(losses[step]):.6g} is expected, and "
            f"step{'s 0 to ' + str(step - 1) if step > 1 else ' 0'} "
            f"{'are' if step > 1 else 'is'} right: what one step leaves for the next is wrong "
            "(gradients not zeroed with optimizer.zero_grad(), weights updated the wrong way "
            "or not kept)",
        )
    return None
