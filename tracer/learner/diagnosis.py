"""Recognising the common mistakes in a learner's attention code.

Each detector looks at what the learner's code actually did (the recorded
torch operations, their arguments and lines) next to the reference's stages,
and names one mistake with the line that made it. They are ordered so that
the first one found is usually the root cause: a discarded ``masked_fill``,
say, also leaves softmax looking at unmasked scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from tracer.learner.compare import close, find, matches_any
from tracer.learner.recorder import MATMUL_OPS, Mutation, Record
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

    def reference(self, name: str) -> torch.Tensor | None:
        """The main tensor of reference stage ``name``, if the variant has it."""
        for stage in self.stages:
            if stage.name == name:
                tensor = stage.tensors.get(name)
                if tensor is None and stage.tensors:
                    tensor = next(iter(stage.tensors.values()))
                return tensor
        return None

    def all_reference(self) -> list[torch.Tensor]:
        return [
            tensor
            for stage in self.stages
            for tensor in stage.tensors.values()
            if tensor.is_floating_point()
        ]


Detector = Callable[[Evidence], list[Diagnosis]]


def _at(line: int | None) -> str:
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
                f"{_at(mutation.line)} changes `{mutation.argument}` in place ({mutation.op}), so "
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
            f"{_at(record.line)} calls masked_fill, which returns a new, masked tensor, and the "
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


def mask_with_diagonal(evidence: Evidence) -> list[Diagnosis]:
    for record in _masked_fills(evidence):
        mask = record.args[1]
        if not isinstance(mask, torch.Tensor) or mask.dim() < 2 or mask.shape[-1] != mask.shape[-2]:
            continue
        if bool(mask.bool().diagonal(dim1=-2, dim2=-1).all()):
            return [
                Diagnosis(
                    "mask-diagonal",
                    "a mask that includes the diagonal",
                    record.line,
                    f"the mask used on {_at(record.line)} also hides the diagonal, so no token may "
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
                f"{_at(record.line)} fills the hidden scores with 0, but softmax turns a score of "
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
        if dim % source.dim() != source.dim() - 1:
            return [
                Diagnosis(
                    "softmax-dim",
                    "softmax over the wrong dimension",
                    record.line,
                    f"softmax on {_at(record.line)} normalises over dim={dim}, down each column "
                    "(across queries). Each query's weights must sum to 1 across the keys, the "
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


def _transposed_products(a: torch.Tensor, b: torch.Tensor) -> list[torch.Tensor]:
    """The products the learner could have meant, with other axes transposed."""
    products = [(a @ b).mT]
    for left, right in ((a, b.mT), (a.mT, b), (a.mT, b.mT)):
        try:
            products.append(left @ right)
        except RuntimeError:  # shapes that do not multiply
            continue
    return products


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
        for candidate in _transposed_products(a, b):
            if matches_any(candidate, reference):
                shape = "×".join(map(str, product.shape))
                return [
                    Diagnosis(
                        "transpose",
                        "transposing the wrong axes",
                        record.line,
                        f"the product on {_at(record.line)} has the wrong axes transposed (it "
                        f"gives {shape}). Scores pair every query row with every key row: "
                        "`queries @ keys.T` (for batched or per-head tensors, transpose only the "
                        "last two axes: `keys.transpose(-2, -1)`).",
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
            if c is None or abs(c - 1) < 1e-5 or abs(c - expected) < 1e-5 * max(1.0, expected):
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
                    f"{_at(record.line)} {how} (d_k = {d_k}, the width of the keys).",
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
                    f"softmax on {_at(record.line)} gets the raw scores. Divide them by "
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
    sums = ", ".join(f"{float(s):.3g}" for s in zeroed.reshape(-1, zeroed.shape[-1]).sum(-1)[:3])
    return [
        Diagnosis(
            "renormalise",
            "masking after softmax without renormalising",
            record.line,
            f"{_at(record.line)} zeroes the future after the softmax, but the rows no longer sum "
            f"to 1 (the first rows sum to {sums}, ...). Divide each row by its sum "
            "(`w / w.sum(dim=-1, keepdim=True)`), or fill the scores with -inf before the softmax.",
        )
    ]


def nan_rows(evidence: Evidence) -> list[Diagnosis]:
    output = evidence.output
    if output is None or not output.is_floating_point() or not bool(output.isnan().any()):
        return []
    return [
        Diagnosis(
            "nan",
            "NaN in the output",
            None,
            "your output contains NaN. A softmax row that is -inf everywhere gives NaN: does "
            "every query keep at least one visible key (itself)?",
        )
    ]


DETECTORS: tuple[Detector, ...] = (
    mutated_inputs,
    discarded_masked_fill,
    mask_with_diagonal,
    fill_with_zero,
    softmax_dimension,
    wrong_transpose,
    scaling,
    missing_renormalisation,
)


def diagnose(evidence: Evidence) -> list[Diagnosis]:
    """Every recognised mistake, the likeliest root cause first."""
    found: list[Diagnosis] = []
    for detector in DETECTORS:
        found.extend(detector(evidence))
    if not any(d.code == "mask-diagonal" for d in found):
        found.extend(nan_rows(evidence))
    return found
