"""Recognising the common mistakes in a learner's attention code.

Each detector looks at what the learner's code actually did (the recorded
torch operations, their arguments and lines) next to the reference's stages,
and names one mistake with the line that made it. They are ordered so that
the first one found is usually the root cause: a discarded ``masked_fill``,
say, also leaves softmax looking at unmasked scores.
"""

from __future__ import annotations

import linecache
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tracer.learner.judging.compare import close, find, matches_any
from tracer.learner.sandbox.recorder import (
    DROPOUT_OPS,
    MATMUL_OPS,
    MULTIPLY_OPS,
    REARRANGING_OPS,
    UNINITIALIZED_OPS,
    Mutation,
    Record,
)
from tracer.variant import Stage


@dataclass(frozen=True)
class Diagnosis:
    """One recognised mistake."""

    code: str
    """Stable identifier, e.g. ``softmax-dim`` (tests and exercises refer to it)."""
    title: str
    line: int | None
    message: str


@dataclass
class Evidence:
    """What the detectors look at."""

    records: Sequence[Record]
    mutations: Sequence[Mutation]
    discarded: Sequence[Record]
    """masked_fill calls whose result nothing used."""
    changed_arguments: Sequence[str]
    """Arguments whose values differ after the call (however they were changed)."""
    output: torch.Tensor | None
    expected_output: torch.Tensor
    stages: Sequence[Stage]
    dropout: float = 0.0
    """The reference's dropout rate."""
    dropout_lines: Sequence[tuple[float, int]] = ()
    """(p, line) where the learner's module sets a dropout rate above 0."""
    path: str = ""
    """The learner's file, to read a loop's ``for`` line."""
    arguments: dict[str, torch.Tensor] = field(default_factory=dict)
    """What the learner's code was given (inputs, W_query...)."""

    def reference(self, name: str) -> torch.Tensor | None:
        """The main tensor of reference stage ``name``, if the variant has it."""
        for stage in self.stages:
            if stage.name == name:
                tensor = stage.tensors.get(name)
                if tensor is None and stage.tensors:
                    tensor = next(iter(stage.tensors.values()))
                return tensor
        return None

    def named(self, name: str) -> list[torch.Tensor]:
        """Every reference tensor called ``name``, in any stage (``keys`` is in ``split`` too)."""
        return [
            tensor
            for stage in self.stages
            for tensor_name, tensor in stage.tensors.items()
            if tensor_name == name and tensor.is_floating_point()
        ]

    def all_reference(self) -> list[torch.Tensor]:
        return [
            tensor
            for stage in self.stages
            for tensor in stage.tensors.values()
            if tensor.is_floating_point()
        ]


Detector = Callable[[Evidence], list[Diagnosis]]


def at_line(line: int | None) -> str:
    """``line 12`` in a diagnosis, or ``your code`` when the line is unknown."""
    return f"line {line}" if line is not None else "your code"


def mutated_inputs(evidence: Evidence) -> list[Diagnosis]:
    seen: set[str] = set()
    found = []
    for mutation in evidence.mutations:
        if mutation.argument in seen:
            continue
        seen.add(mutation.argument)
        found.append(
            Diagnosis(
                "inputs-mutated",
                "mutating the inputs in place",
                mutation.line,
                f"{at_line(mutation.line)} changes `{mutation.argument}` in place ({mutation.op}), so "
                "the caller's tensor changes too and later steps see altered values. Compute a "
                f"new tensor instead (`x = x * 2`, not `x *= 2`), or work on `{mutation.argument}.clone()`.",
            )
        )
    for name in evidence.changed_arguments:
        if name not in seen:
            found.append(
                Diagnosis(
                    "inputs-mutated",
                    "mutating the inputs in place",
                    None,
                    f"`{name}` holds different values after your function returned: it was "
                    "changed in place. Leave the arguments as they are and compute new tensors.",
                )
            )
    return found


def discarded_masked_fill(evidence: Evidence) -> list[Diagnosis]:
    return [
        Diagnosis(
            "discarded-masked-fill",
            "a masked_fill whose result is discarded",
            record.line,
            f"{at_line(record.line)} calls masked_fill, which returns a new, masked tensor, and the "
            "result is thrown away: the scores themselves stay unmasked. Assign it "
            "(`scores = scores.masked_fill(mask, -torch.inf)`) or use the in-place `masked_fill_`.",
        )
        for record in evidence.discarded
    ]


def _masked_fills(evidence: Evidence) -> list[Record]:
    return [
        r for r in evidence.records if r.op in ("masked_fill", "masked_fill_") and len(r.args) >= 3
    ]


def _fill_value(record: Record) -> float | None:
    value = record.args[2]
    if isinstance(value, torch.Tensor):
        return float(value) if value.numel() == 1 else None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def mask_origin(evidence: Evidence, mask: torch.Tensor, used: Record) -> int | None:
    """The line that built ``mask`` (its triu/tril call), where the fix goes; else where it is used."""
    square = _square_mask(mask)
    if square is None:
        return used.line
    for record in evidence.records:
        if record.op not in ("triu", "tril") or record.index > used.index or record.value is None:
            continue
        built = _square_mask(record.value)
        if built is None or built.shape != square.shape:
            continue
        if bool(torch.equal(built, square)) or bool(torch.equal(~built, square)):
            return record.line
    return used.line


def mask_with_diagonal(evidence: Evidence) -> list[Diagnosis]:
    for record in _masked_fills(evidence):
        mask = record.args[1]
        if not isinstance(mask, torch.Tensor) or mask.dim() < 2 or mask.shape[-1] != mask.shape[-2]:
            continue
        if bool(mask.bool().all()):
            continue  # a tile of keys hidden whole (a tiled loop's), not a mask with a diagonal
        if bool(mask.bool().diagonal(dim1=-2, dim2=-1).all()):
            return [
                Diagnosis(
                    "mask-diagonal",
                    "a mask that includes the diagonal",
                    mask_origin(evidence, mask, record),
                    f"the mask used on {at_line(record.line)} also hides the diagonal, so no token may "
                    "attend to itself: the first token has no key left at all, its row is -inf "
                    "everywhere and softmax turns it into NaN. Build the mask with "
                    "`torch.triu(torch.ones(n, n), diagonal=1)` so only later tokens are hidden.",
                )
            ]
    return []


def _row_stochastic(tensor: torch.Tensor) -> bool:
    if not tensor.is_floating_point() or tensor.dim() == 0:
        return False
    finite = tensor.isfinite().all() and bool((tensor >= -1e-6).all())
    return bool(finite) and bool(
        torch.allclose(tensor.sum(dim=-1).double(), torch.tensor(1.0).double(), atol=1e-4)
    )


def fill_with_zero(evidence: Evidence) -> list[Diagnosis]:
    for record in _masked_fills(evidence):
        target = record.args[0]
        if _fill_value(record) != 0.0 or not isinstance(target, torch.Tensor):
            continue
        if _row_stochastic(target):
            continue  # zeroing weights after softmax: a different route, checked elsewhere
        return [
            Diagnosis(
                "fill-zero",
                "filling with 0 instead of -inf",
                record.line,
                f"{at_line(record.line)} fills the hidden scores with 0, but softmax turns a score of "
                "0 into exp(0) = 1, so future tokens still get weight. Fill them with -torch.inf: "
                "exp(-inf) = 0, and the weights of the visible tokens still sum to 1.",
            )
        ]
    return []


def softmax_dimension(evidence: Evidence) -> list[Diagnosis]:
    for record in evidence.records:
        if record.op != "softmax" or not record.args:
            continue
        source = record.args[0]
        dim = record.args[1] if len(record.args) > 1 else record.kwargs.get("dim")
        if not isinstance(source, torch.Tensor) or not isinstance(dim, int) or source.dim() < 2:
            continue
        axis = dim % source.dim()
        if axis != source.dim() - 1:
            if axis == source.dim() - 2:
                across = "down each column (across queries)"
            elif source.dim() >= 3 and axis == source.dim() - 3:
                across = "across the heads (each query-key pair's weights over the heads)"
            else:
                across = "across the batch"
            return [
                Diagnosis(
                    "softmax-dim",
                    "softmax over the wrong dimension",
                    record.line,
                    f"softmax on {at_line(record.line)} normalises {across}. "
                    "Each query's weights must sum to 1 across the keys, the "
                    "last dimension: use `dim=-1`.",
                )
            ]
    return []


def _operands(record: Record) -> tuple[torch.Tensor, torch.Tensor] | None:
    if record.op not in MATMUL_OPS or len(record.args) < 2:
        return None
    a, b = record.args[0], record.args[1]
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return None
    if a.dim() < 2 or b.dim() < 2:
        return None
    return (b, a) if record.op == "__rmatmul__" else (a, b)


def _transposed_products(a: torch.Tensor, b: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """The products the learner could have meant, with other axes transposed, each with
    which operand it transposes back (``a``, ``b``, both, or the product)."""
    products = [("product", (a @ b).mT)]
    for which, left, right in (("b", a, b.mT), ("a", a.mT, b), ("both", a.mT, b.mT)):
        try:
            products.append((which, left @ right))
        except RuntimeError:  # shapes that do not multiply
            continue
    return products


def _transposed_earlier(
    evidence: Evidence, operand: torch.Tensor, product: Record
) -> Diagnosis | None:
    """An operand that was a right tensor transposed on an earlier line: that line, which
    turned the right tensor wrong (``weights = torch.softmax(s, dim=-1).T``), is the one to fix."""
    if matches_any(operand, evidence.all_reference()):
        return None
    name = next(
        (
            tensor_name
            for stage in evidence.stages
            for tensor_name, tensor in stage.tensors.items()
            if tensor.is_floating_point() and close(operand.mT, tensor)
        ),
        None,
    )
    if name is None:
        return None
    made = next(
        (
            r
            for r in reversed(evidence.records[: product.index])
            if r.op in REARRANGING_OPS and r.value is not None and close(r.value, operand)
        ),
        None,
    )
    if made is None or made.line is None or made.line == product.line:
        return None
    return Diagnosis(
        "transpose",
        "transposing the wrong axes",
        made.line,
        f"{at_line(made.line)} transposes your {name} (`.{made.op}`) after it was computed "
        f"correctly: the product on {at_line(product.line)} then uses it with rows and columns "
        "swapped. Drop that transpose, or undo it before the product.",
    )


def wrong_transpose(evidence: Evidence) -> list[Diagnosis]:
    reference = evidence.all_reference()
    known = reference + [t.mT for t in reference if t.dim() >= 2]
    for record in evidence.records:
        operands = _operands(record)
        if operands is None:
            continue
        a, b = operands
        product = a @ b
        if matches_any(product, reference):
            continue
        if not (matches_any(a, known) and matches_any(b, known)):
            continue  # the operands are already wrong: the mistake is earlier
        for which, candidate in _transposed_products(a, b):
            if matches_any(candidate, reference):
                operand = {"a": a, "b": b}.get(which)
                earlier = (
                    _transposed_earlier(evidence, operand, record) if operand is not None else None
                )
                if earlier is not None:
                    return [earlier]
                shape = "×".join(map(str, product.shape))
                return [
                    Diagnosis(
                        "transpose",
                        "transposing the wrong axes",
                        record.line,
                        f"the product on {at_line(record.line)} has the wrong axes transposed (it "
                        f"gives {shape}). Scores pair every query row with every key row: "
                        "`queries @ keys.T` (for batched or per-head tensors, transpose only the "
                        "last two axes: `keys.transpose(-2, -1)`).",
                    )
                ]
    for record in evidence.records:
        value = record.value
        if record.op != "einsum" or value is None or value.dim() < 2:
            continue
        if not matches_any(value, reference) and matches_any(value.mT, reference):
            return [
                Diagnosis(
                    "transpose",
                    "transposing the wrong axes",
                    record.line,
                    f"the einsum on {at_line(record.line)} writes its result with the last two axes "
                    "swapped (keys before queries); the output subscripts should list the "
                    "query axis first, e.g. `'qe,ke->qk'`.",
                )
            ]
    output, expected = evidence.output, evidence.expected_output
    if output is not None and output.dim() >= 2 and close(output.mT, expected):
        return [
            Diagnosis(
                "transpose",
                "transposing the wrong axes",
                evidence.records[-1].line if evidence.records else None,
                "your output is the expected one transposed: one row per token is expected, "
                "one column per output dimension.",
            )
        ]
    return []


def _ratio(mine: torch.Tensor, reference: torch.Tensor) -> float | None:
    """The constant c with mine = c · reference, if there is one."""
    if tuple(mine.shape) != tuple(reference.shape):
        return None
    a, b = mine.double(), reference.double()
    finite = a.isfinite() & b.isfinite()
    usable = finite & (b.abs() > 1e-6)
    if not usable.any():
        return None
    ratios = a[usable] / b[usable]
    c = float(ratios.mean())
    if float((ratios - c).abs().max()) > 1e-4 * max(1.0, abs(c)):
        return None
    # Where the reference is zero a multiple of it is zero too; checking this lets
    # a single non-zero entry (degenerate inputs) still identify c without guessing.
    zeros = finite & ~usable
    if zeros.any() and float(a[zeros].abs().max()) > 1e-5 * max(1.0, abs(c)):
        return None
    return c


def _same_scale(mine: torch.Tensor, reference: torch.Tensor) -> bool:
    c = _ratio(mine, reference)
    return c is not None and abs(c - 1) < 1e-5


def scaling(evidence: Evidence) -> list[Diagnosis]:
    scores, scaled = evidence.reference("scores"), evidence.reference("scaled")
    keys = evidence.reference("keys")
    masked = evidence.reference("masked_scores")
    if scores is None or scaled is None:
        return []
    if find(scaled, evidence.records) is not None:
        return []
    if masked is not None and find(masked, evidence.records) is not None:
        return []
    expected = _ratio(scaled, scores)
    if expected is None:
        if keys is None:
            return []
        expected = 1 / math.sqrt(keys.shape[-1])
    d_k = round(1 / expected**2)
    root = math.sqrt(d_k)
    # Per-head scores may be computed whole or one head at a time.
    heads = [scores] if scores.dim() < 3 else [scores, *scores]
    for record in evidence.records:
        if record.value is None or record.value.dtype == torch.bool:
            continue
        for head in heads:
            c = _ratio(record.value, head)
            if c is None or abs(c) < 1e-9 or abs(c - 1) < 1e-5:
                continue
            if abs(c - expected) < 1e-5 * max(1.0, expected):
                continue
            if abs(1 / c - d_k) < 1e-3:
                how = f"divides the scores by d_k = {d_k} instead of √d_k ≈ {root:.4g}"
            elif abs(c - root) < 1e-3:
                how = f"multiplies the scores by √d_k ≈ {root:.4g} instead of dividing by it"
            else:
                how = f"scales the scores by {c:.4g}; they should be divided by √d_k ≈ {root:.4g}"
            return [
                Diagnosis(
                    "scaling",
                    "wrong √d_k scaling",
                    record.line,
                    f"{at_line(record.line)} {how} (d_k = {d_k}, the width of the keys).",
                )
            ]
    for record in evidence.records:
        if record.op != "softmax" or not record.args:
            continue
        source = record.args[0]
        if isinstance(source, torch.Tensor) and any(_same_scale(source, h) for h in heads):
            return [
                Diagnosis(
                    "scaling",
                    "missing √d_k scaling",
                    record.line,
                    f"softmax on {at_line(record.line)} gets the raw scores. Divide them by "
                    f"√d_k ≈ {root:.4g} first (d_k = {d_k} = keys.shape[-1]); unscaled scores grow "
                    "with the key width and push softmax towards all-or-nothing weights.",
                )
            ]
    return []


def missing_renormalisation(evidence: Evidence) -> list[Diagnosis]:
    scaled, mask, weights = (
        evidence.reference("scaled"),
        evidence.reference("mask"),
        evidence.reference("weights"),
    )
    if scaled is None or mask is None or weights is None or mask.dtype != torch.bool:
        return []
    if find(weights, evidence.records) is not None:
        return []
    zeroed = torch.softmax(scaled, dim=-1).masked_fill(mask, 0.0)
    record = find(zeroed, evidence.records)
    if record is None:
        return []
    if _renormalised_elsewhere(zeroed, evidence.records[record.index + 1 :]):
        return []  # they did renormalise, over another axis: not this mistake
    sums = ", ".join(f"{float(s):.3g}" for s in zeroed.reshape(-1, zeroed.shape[-1]).sum(-1)[:3])
    return [
        Diagnosis(
            "renormalise",
            "masking after softmax without renormalising",
            record.line,
            f"{at_line(record.line)} zeroes the future after the softmax, but the rows no longer sum "
            f"to 1 (the first rows sum to {sums}, ...). Divide each row by its sum "
            "(`w / w.sum(dim=-1, keepdim=True)`), or fill the scores with -inf before the softmax.",
        )
    ]


def _renormalised_elsewhere(zeroed: torch.Tensor, later: Sequence[Record]) -> bool:
    """Whether a later tensor is the zeroed weights divided by sums over another axis."""
    for axis in range(zeroed.dim() - 1):
        other = zeroed / zeroed.sum(dim=axis, keepdim=True).clamp(min=1e-30)
        if any(r.value is not None and close(r.value, other) for r in later):
            return True
    return False


def nan_rows(evidence: Evidence) -> list[Diagnosis]:
    output = evidence.output
    if output is None or not output.is_floating_point() or not bool(output.isnan().any()):
        return []
    text = (
        "your output contains NaN. A softmax row that is -inf everywhere gives NaN: does "
        "every query keep at least one visible key (itself)?"
    )
    made = next((r for r in evidence.records if r.op in UNINITIALIZED_OPS), None)
    if made is not None:
        # The recorder fills a tensor made without values with NaN (recorder.UNINITIALIZED_OPS).
        text += (
            f" Or what {made.op}() made at line {made.line} has cells your code never wrote: "
            "the check fills what it makes with NaN, so a cell left out shows."
        )
    return [Diagnosis("nan", "NaN in the output", None, text)]


def _square_mask(value: Any) -> torch.Tensor | None:
    """A 2-d (or batched) square mask as booleans, from a bool or 0/1 tensor."""
    if not isinstance(value, torch.Tensor) or value.dim() < 2 or value.shape[-1] != value.shape[-2]:
        return None
    if value.dtype != torch.bool:
        if not value.is_floating_point() and value.dtype not in (torch.int64, torch.int32):
            return None
        if not bool(((value == 0) | (value == 1)).all()):
            return None
        value = value.bool()
    first: torch.Tensor = value.reshape(-1, value.shape[-2], value.shape[-1])[0]
    return first


def mask_sees_future(evidence: Evidence) -> list[Diagnosis]:
    """A mask that hides the past and shows the future (tril and triu swapped)."""
    for record in _masked_fills(evidence):
        mask = _square_mask(record.args[1])
        if mask is None or mask.shape[-1] < 2:
            continue
        future = torch.ones_like(mask).triu(1)
        past = torch.ones_like(mask).tril(-1)
        if bool((mask & future).any()) or not bool((mask & past).any()):
            continue
        line = mask_origin(evidence, record.args[1], record)
        return [
            Diagnosis(
                "mask-future",
                "a mask that hides the past instead of the future",
                line,
                f"the mask built on {at_line(line)} hides earlier tokens and lets every query see "
                "later ones (tril and triu swapped); hide the future with "
                "`torch.triu(torch.ones(n, n), diagonal=1).bool()`.",
            )
        ]
    return []


def mask_by_multiplying(evidence: Evidence) -> list[Diagnosis]:
    """Scores multiplied by a 0/1 lower-triangular mask before the softmax."""
    for record in evidence.records:
        if record.op not in MULTIPLY_OPS or len(record.args) < 2:
            continue
        a, b = record.args[0], record.args[1]
        for mask_value, other in ((a, b), (b, a)):
            mask = _square_mask(mask_value)
            if mask is None or not isinstance(other, torch.Tensor) or not other.is_floating_point():
                continue
            if mask_value.dtype == torch.bool or mask_value.dim() < 2:
                continue
            if not bool((~mask).any()) or not bool(mask.any()) or _row_stochastic(other):
                continue  # zeroing weights after softmax is route 1, checked elsewhere
            return [
                Diagnosis(
                    "mask-multiply",
                    "masking by multiplying the scores with a 0/1 mask",
                    record.line,
                    f"{at_line(record.line)} multiplies the scores by a 0/1 mask, so hidden scores "
                    "become 0 and softmax still gives them weight exp(0) = 1; use "
                    "`scores.masked_fill(mask, -torch.inf)` before the softmax instead.",
                )
            ]
    return []


def _context_products(evidence: Evidence) -> list[tuple[Record, torch.Tensor, torch.Tensor]]:
    found = []
    for record in evidence.records:
        operands = _operands(record)
        if operands is not None:
            found.append((record, *operands))
    return found


def wrong_values(evidence: Evidence) -> list[Diagnosis]:
    """weights @ keys, weights @ inputs, values.T @ weights: the context from the wrong operands."""
    weights = evidence.named("weights") + evidence.named("renormalized")
    values = evidence.named("values")
    keys = evidence.named("keys")
    inputs = evidence.named("inputs")
    if not weights:
        return []
    for record, a, b in _context_products(evidence):
        if matches_any(a, weights) and values and not matches_any(b, values):
            if keys and matches_any(b, keys):
                return [
                    Diagnosis(
                        "keys-as-values",
                        "keys used where the values belong",
                        record.line,
                        f"{at_line(record.line)} multiplies the weights by the keys; the context "
                        "vectors mix the values: `weights @ values`.",
                    )
                ]
            if inputs and matches_any(b, inputs):
                return [
                    Diagnosis(
                        "inputs-as-values",
                        "the inputs used where the values belong",
                        record.line,
                        f"{at_line(record.line)} multiplies the weights by the raw inputs; with "
                        "trainable weights the context mixes the values: "
                        "`values = inputs @ W_value`, then `weights @ values`.",
                    )
                ]
        if (
            values
            and matches_any(b, weights + [w.mT for w in weights])
            and matches_any(a, [v.mT for v in values])
        ):
            return [
                Diagnosis(
                    "context-order",
                    "values and weights multiplied the wrong way round",
                    record.line,
                    f"{at_line(record.line)} computes values.T @ weights; the context is "
                    "`weights @ values` (one row per query, the weights on the left).",
                )
            ]
    return []


def head_layout(evidence: Evidence) -> list[Diagnosis]:
    """Heads split or merged with view/reshape alone, without the transpose."""
    heads_found = [t for t in evidence.named("queries") + evidence.named("keys") if t.dim() == 3]
    if not heads_found:
        return []
    h, n, width = heads_found[0].shape
    projected = [
        t
        for t in evidence.named("queries") + evidence.named("keys") + evidence.named("values")
        if t.dim() == 2 and t.shape == (n, h * width)
    ]
    split_wrong = [t.reshape(h, n, width) for t in projected]
    merged = [t for t in evidence.named("head_context") if t.dim() == 3]
    merge_wrong = [t.reshape(n, h * width) for t in merged]
    for record in evidence.records:
        value = record.value
        if value is None or not value.is_floating_point():
            continue
        if (
            h > 1
            and matches_any(value, split_wrong)
            and not matches_any(value, evidence.all_reference())
        ):
            return [
                Diagnosis(
                    "head-split",
                    "heads split without the transpose",
                    record.line,
                    f"{at_line(record.line)} reshapes (tokens, d_out) straight to (heads, tokens, "
                    "head_dim), which mixes tokens across heads; use "
                    "`.view(n, heads, head_dim).transpose(0, 1)`.",
                )
            ]
        if (
            h > 1
            and matches_any(value, merge_wrong)
            and not matches_any(value, evidence.all_reference())
        ):
            return [
                Diagnosis(
                    "head-merge",
                    "heads merged without the transpose",
                    record.line,
                    f"{at_line(record.line)} reshapes (heads, tokens, head_dim) straight to "
                    "(tokens, d_out), which mixes tokens across heads; use "
                    "`.transpose(0, 1).contiguous().view(n, d_out)`.",
                )
            ]
    return []


def softmax_whole_matrix(evidence: Evidence) -> list[Diagnosis]:
    """exp(x) / exp(x).sum(): normalised over the whole matrix instead of each row."""
    sources = evidence.named("scores") + evidence.named("scaled") + evidence.named("masked_scores")
    wrong, columns = [], []
    for scores in sources:
        exp = scores.double().exp()
        wrong.append(exp / exp.sum())
        columns.append(exp / exp.sum(dim=-2, keepdim=True))
    for record in evidence.records:
        value = record.value
        if value is None or not value.is_floating_point() or value.dim() < 2:
            continue
        if any(close(value, c) for c in columns):
            return [
                Diagnosis(
                    "softmax-dim",
                    "softmax over the wrong dimension",
                    record.line,
                    f"{at_line(record.line)} sums exp over dim=0, down each column (across queries), "
                    "as a softmax written for one vector does on a matrix; each query's row must "
                    "sum to 1: `.sum(dim=-1, keepdim=True)`.",
                )
            ]
        if any(close(value, w) for w in wrong):
            return [
                Diagnosis(
                    "softmax-all",
                    "softmax over the whole matrix",
                    record.line,
                    f"{at_line(record.line)} divides by one sum over the whole matrix, so no row sums "
                    "to 1; normalise each query's row: `.sum(dim=-1, keepdim=True)` (or "
                    "`torch.softmax(scores, dim=-1)`).",
                )
            ]
    return []


def dropout_left_on(evidence: Evidence) -> list[Diagnosis]:
    """Dropout applied while the reference has none (a hard-coded rate, or training mode)."""
    if evidence.dropout > 0:
        return []
    for record in evidence.records:
        if record.op not in DROPOUT_OPS:
            continue
        p = record.args[1] if len(record.args) > 1 else record.kwargs.get("p", 0.5)
        training = record.args[2] if len(record.args) > 2 else record.kwargs.get("training", True)
        if not isinstance(p, (int, float)) or p <= 0 or training is False:
            continue
        line = next((at for rate, at in evidence.dropout_lines if abs(rate - p) < 1e-9), None)
        line = record.line if line is None else line
        return [
            Diagnosis(
                "dropout-on",
                "dropout applied when the check has none",
                line,
                f"{at_line(line)} sets dropout p = {p:g} although this check runs with "
                "--dropout 0; take the rate as the `dropout` argument instead of a fixed number "
                "(or pass --dropout to compare with dropout on).",
            )
        ]
    return []


def skipped_in_loop(evidence: Evidence) -> list[Diagnosis]:
    """A loop that never writes some cells: the last row or column, or the diagonal."""
    for name in ("scores", "context"):
        for expected in evidence.named(name):
            if expected.dim() != 2:
                continue
            writes = [
                r
                for r in evidence.records
                if r.inplace
                and r.value is not None
                and tuple(r.value.shape) == tuple(expected.shape)
            ]
            if not writes:
                continue
            final = writes[-1]
            assert final.value is not None
            value = final.value
            wrong = ~torch.isclose(value.double(), expected.double(), rtol=1e-5, atol=1e-5)
            if not bool(wrong.any()):
                continue
            rows = wrong.any(dim=1).nonzero().flatten().tolist()
            columns = wrong.any(dim=0).nonzero().flatten().tolist()
            last_row, last_column = expected.shape[0] - 1, expected.shape[1] - 1
            if rows == [last_row]:
                which, axis = "the last row", 0
            elif columns == [last_column]:
                which, axis = "the last column", 1
            else:
                continue
            line = _loop_line(evidence.path, final.line, axis)
            return [
                Diagnosis(
                    "loop-range",
                    "a loop that stops one short",
                    line,
                    f"the loop on {at_line(line)} never reaches the last token, so {name} misses "
                    f"{which}; loop over every token (`range(n)`, not `range(n - 1)`).",
                )
            ]
    return []


def weights_layout(evidence: Evidence) -> list[Diagnosis]:
    """inputs @ W.T with square weights: nn.Linear's layout, which runs but gives other numbers."""
    inputs = evidence.arguments.get("inputs")
    if inputs is None:
        return []
    weights = {n: w for n, w in evidence.arguments.items() if n.startswith("W_") and w.dim() >= 2}
    for record, a, b in _context_products(evidence):
        if not close(a, inputs):
            continue
        for name, w in weights.items():
            if w.shape[-1] == w.shape[-2] and close(b, w.mT) and not close(b, w):
                return [
                    Diagnosis(
                        "weights-layout",
                        "weights transposed as if they were nn.Linear's",
                        record.line,
                        f"{at_line(record.line)} multiplies by {name}.T; attn check passes weights as "
                        f"d_in×d_out, applied as `inputs @ {name}` (nn.Linear stores the "
                        "transpose), so drop the .T.",
                    )
                ]
    return []


def mask_unused(evidence: Evidence) -> list[Diagnosis]:
    """A causal mask built and never applied (no masked_fill, where or product uses it)."""
    if not any(stage.name == "mask" for stage in evidence.stages):
        return []
    built = [r for r in evidence.records if r.op in ("triu", "tril")]
    applies = {"masked_fill", "masked_fill_", "where", *MULTIPLY_OPS}
    if not built or any(r.op in applies for r in evidence.records):
        return []
    line = built[-1].line
    return [
        Diagnosis(
            "mask-unused",
            "a mask that is never applied",
            line,
            f"{at_line(line)} builds the causal mask, but nothing applies it, so every query still "
            "sees the future; apply it before the softmax: "
            "`scores = scores.masked_fill(mask, -torch.inf)`.",
        )
    ]


def _loop_line(path: str, write_line: int | None, axis: int) -> int | None:
    """The ``for`` line of the loop variable that indexes ``axis`` in the write on ``write_line``."""
    if write_line is None or not path:
        return write_line
    linecache.checkcache(path)
    index = re.search(r"\[\s*(\w+)\s*,\s*(\w+)\s*\]", linecache.getline(path, write_line))
    if index is None:
        return write_line
    variable = index.group(axis + 1)
    loop = re.compile(rf"^\s*for\s+(?:\w+\s*,\s*)?{re.escape(variable)}\b")
    for line in range(write_line - 1, max(write_line - 30, 0), -1):
        if loop.search(linecache.getline(path, line)):
            return line
    return write_line


def wrong_projection(evidence: Evidence) -> list[Diagnosis]:
    """Scores from queries and something that is not the keys (computed with the wrong weights)."""
    queries, keys = evidence.named("queries"), evidence.named("keys")
    others = {"queries": queries, "values": evidence.named("values")}
    if not queries or not keys:
        return []
    for record, a, b in _context_products(evidence):
        if not matches_any(a, queries) or matches_any(b.mT, keys):
            continue
        for role, tensors in others.items():
            if not matches_any(b.mT, tensors):
                continue
            source = [
                r
                for r in evidence.records[: record.index]
                if r.value is not None and r.value.shape == b.mT.shape and close(r.value, b.mT)
            ]
            line = source[-1].line if source else record.line
            weight = "W_query" if role == "queries" else "W_value"
            return [
                Diagnosis(
                    "projection-weights",
                    "keys computed with the wrong weights",
                    line,
                    f"the keys made on {at_line(line)} equal the {role}: they were computed with "
                    f"{weight}'s columns; compute them with W_key (`keys = inputs @ W_key`).",
                )
            ]
    return []


DETECTORS: tuple[Detector, ...] = (
    mutated_inputs,
    weights_layout,
    discarded_masked_fill,
    mask_with_diagonal,
    mask_sees_future,
    mask_unused,
    fill_with_zero,
    mask_by_multiplying,
    softmax_dimension,
    softmax_whole_matrix,
    skipped_in_loop,
    head_layout,
    wrong_projection,
    wrong_values,
    wrong_transpose,
    scaling,
    missing_renormalisation,
    dropout_left_on,
)


def diagnose(evidence: Evidence) -> list[Diagnosis]:
    """Every recognised mistake, the likeliest root cause first."""
    found: list[Diagnosis] = []
    for detector in DETECTORS:
        found.extend(detector(evidence))
    if not any(d.code == "mask-diagonal" for d in found):
        found.extend(nan_rows(evidence))
    codes: set[str] = set()
    unique = []
    for diagnosis in found:  # two detectors may see one mistake; name it once
        if diagnosis.code not in codes:
            codes.add(diagnosis.code)
            unique.append(diagnosis)
    found = unique
    if any(d.code in ("softmax-dim", "softmax-all", "weights-layout") for d in found):
        # A badly normalised matrix, or weights in nn.Linear's layout, can look like a
        # transposed product; the softmax or the layout is the cause.
        found = [d for d in found if d.code != "transpose"]
    return found
