"""Checking a learner's dropout by its structure, when the reference runs with dropout on.

The reference draws its keep/drop mask from numpy's ``RandomState``; a learner's
``nn.Dropout`` or ``F.dropout`` draws from torch's generator. The two masks
differ, so the tensors after dropout cannot be compared value by value. What
can be checked honestly is the structure:

- the weights before dropout equal the reference's;
- each weight after dropout is either 0 or ``weight / (1 - p)``, some are
  dropped and some kept;
- the context is the learner's own dropped weights times the values.

When the learner's dropout cannot be found, nothing is claimed: the result
says so instead of guessing (:attr:`DropoutCheck.note`).
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tracer.learner.judging.compare import close, find, matches_any
from tracer.learner.judging.diagnosis import Diagnosis, at_line
from tracer.learner.sandbox.recorder import DROPOUT_OPS, Record
from tracer.variant import Stage

CHECK_RATE = 0.5
"""The rate of the second configuration: half the weights dropped, so a dropout that does
nothing, or one that forgets to rescale, cannot go unnoticed."""

SCALED = "scaled"
UNSCALED = "unscaled"
EVAL_CALL = re.compile(
    r"\.eval\(\s*\)|\.train\(\s*(?:False|mode\s*=\s*False)\s*\)|training\s*=\s*False"
)


@dataclass(frozen=True)
class DropoutCheck:
    """What the structure of the learner's dropout showed."""

    rate: float
    verified: bool
    """The weights before dropout, the dropout itself and the context all hold."""
    diagnosis: Diagnosis | None = None
    """The mistake, when one was recognised."""
    note: str | None = None
    """Why nothing could be established (neither verified nor a mistake named)."""
    dropped: Record | None = None
    """The learner's weights after dropout."""
    context: Record | None = None
    """The learner's context computed from them."""
    context_stage: str | None = None
    """The reference stage right after dropout (``context``, ``head_context``)."""


def dropped_from(value: torch.Tensor, source: torch.Tensor, p: float) -> str | None:
    """:data:`SCALED` when ``value`` keeps or zeroes each entry of ``source`` and scales the kept
    ones by 1/(1-p); :data:`UNSCALED` when it keeps them as they are; else None.

    Some entries must be dropped and some kept: a tensor left whole, or all zeros, is neither.
    """
    if tuple(value.shape) != tuple(source.shape) or not value.is_floating_point():
        return None
    v, s = value.double(), source.double()
    finite = s.isfinite()
    if not bool(v[finite].isfinite().all()):
        return None
    live = finite & (s.abs() > 1e-12)
    if not bool(live.any()):
        return None
    # Where the source is 0 (a masked weight) any dropout leaves 0.
    if bool((v[finite & ~live].abs() > 1e-6).any()):
        return None
    dropped = live & (v.abs() <= 1e-12)
    if not bool(dropped.any()):
        return None
    for scale, kind in ((1 / (1 - p), SCALED), (1.0, UNSCALED)):
        kept = live & torch.isclose(v, s * scale, rtol=1e-4, atol=1e-7)
        if bool(kept.any()) and bool((kept | dropped)[live].all()):
            return kind
    return None


def _main(stage: Stage) -> torch.Tensor | None:
    tensor = stage.tensors.get(stage.name)
    if tensor is None and stage.tensors:
        tensor = next(iter(stage.tensors.values()))
    return tensor if tensor is not None and tensor.is_floating_point() else None


def _named(stages: Sequence[Stage], names: tuple[str, ...]) -> list[torch.Tensor]:
    return [
        tensor
        for stage in stages
        for name, tensor in stage.tensors.items()
        if name in names and tensor.is_floating_point()
    ]


def _values_for(
    stages: Sequence[Stage], dropped: torch.Tensor, after: torch.Tensor
) -> torch.Tensor | None:
    """The reference's values V with ``after = dropped @ V``: how the stage after dropout is made."""
    for values in _named(stages, ("values",)):
        try:
            product = dropped @ values
        except RuntimeError:  # shapes that do not multiply
            continue
        if close(product, after):
            return values
    return None


def _rate(record: Record) -> float | None:
    p = record.args[1] if len(record.args) > 1 else record.kwargs.get("p", 0.5)
    return float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None


def _training(record: Record) -> bool:
    training = record.args[2] if len(record.args) > 2 else record.kwargs.get("training", True)
    return training is not False


def _is_dropout(record: Record) -> bool:
    return record.op in DROPOUT_OPS and bool(record.args)


def _source_line(path: str, pattern: re.Pattern[str]) -> int | None:
    linecache.checkcache(path)
    for number, text in enumerate(linecache.getlines(path), start=1):
        code = text.split("#", 1)[0]
        if pattern.search(code):
            return number
    return None


def check_dropout(
    stages: Sequence[Stage],
    records: Sequence[Record],
    p: float,
    *,
    output: torch.Tensor | None,
    path: str = "",
    dropout_lines: Sequence[tuple[float, int]] = (),
    takes_dropout: bool = True,
) -> DropoutCheck | None:
    """The learner's dropout, checked by structure; None when the reference has no dropout."""
    by_name = {stage.name: stage for stage in stages}
    if p <= 0 or "dropout" not in by_name or "weights" not in by_name:
        return None
    weights, reference_dropped = _main(by_name["weights"]), _main(by_name["dropout"])
    if weights is None or reference_dropped is None:
        return None
    position = list(by_name).index("dropout")
    after_stage = stages[position + 1] if position + 1 < len(stages) else None
    after = _main(after_stage) if after_stage is not None else None
    values = _values_for(stages, reference_dropped, after) if after is not None else None
    context_stage = after_stage.name if values is not None and after_stage is not None else None
    ops = [r for r in records if _is_dropout(r)]

    def found(diagnosis: Diagnosis, dropped: Record | None = None) -> DropoutCheck:
        return DropoutCheck(p, False, diagnosis, dropped=dropped, context_stage=context_stage)

    def unknown(note: str) -> DropoutCheck:
        return DropoutCheck(p, False, note=note, context_stage=context_stage)

    before = find(weights, records)
    if before is None:
        # The weights before dropout differ: dropout moved before the softmax, or an
        # ordinary mistake that the other detectors name.
        scores = _named(stages, ("scores", "scaled", "masked_scores"))
        for record in records:
            applied = (
                _is_dropout(record)
                and isinstance(record.args[0], torch.Tensor)
                and matches_any(record.args[0], scores)
            )
            shaped = record.value is not None and any(
                dropped_from(record.value, s, p) for s in scores
            )
            if applied or shaped:
                return found(
                    Diagnosis(
                        "dropout-scores",
                        "dropout applied to the scores, before the softmax",
                        record.line,
                        f"{at_line(record.line)} applies dropout to the attention scores; dropout "
                        "belongs on the weights after the softmax (`weights = "
                        "self.dropout(torch.softmax(scores, dim=-1))`), so each row still "
                        "sums to 1 before some weights are dropped.",
                    )
                )
        return None

    later = [
        r
        for r in records[before.index + 1 :]
        if r.value is not None and tuple(r.value.shape) == tuple(weights.shape)
    ]
    for record in later:
        assert record.value is not None
        kind = dropped_from(record.value, weights, p)
        if kind == UNSCALED:
            return found(
                Diagnosis(
                    "dropout-unscaled",
                    "dropped weights without rescaling the kept ones",
                    record.line,
                    f"{at_line(record.line)} zeroes some weights but leaves the others as they "
                    f"were; dropout also divides the kept weights by 1 - p = {1 - p:g}, so "
                    "their expected sum stays the same (`weights * keep / (1 - p)`, or "
                    "nn.Dropout, which does it for you).",
                ),
                record,
            )
        if kind != SCALED:
            continue
        if values is None:
            return unknown(
                "your weights after dropout have the right structure, but what this variant "
                "computes from them could not be matched, so the rest was not checked"
            )
        context = find(record.value @ values, records, record.index + 1)
        if context is not None:
            last = after_stage is stages[-1]
            if last and output is not None and not close(output, record.value @ values):
                made = next(
                    (
                        r
                        for r in reversed(records)
                        if r.value is not None and close(r.value, output)
                    ),
                    None,
                )
                if made is None or made.index <= context.index:
                    return unknown("your output is not the context your dropped weights give")
                return found(
                    Diagnosis(
                        "dropout-twice",
                        "the context changed again after dropout",
                        made.line,
                        f"{at_line(made.line)} changes the context that line {context.line} made "
                        "from your dropped weights; with dropout on, that context is the "
                        "output (is dropout applied a second time?).",
                    ),
                    record,
                )
            if last and output is None:
                return unknown("your function returned no usable output")
            return DropoutCheck(
                p, True, dropped=record, context=context, context_stage=context_stage
            )
        undropped = find(weights @ values, records, record.index + 1)
        if undropped is not None:
            return found(
                Diagnosis(
                    "dropout-unused",
                    "the context uses the weights before dropout",
                    undropped.line,
                    f"{at_line(undropped.line)} multiplies the weights from before dropout by the "
                    f"values, so the dropout on line {record.line} changes nothing; use the "
                    "dropped weights (`weights = self.dropout(weights)`, then `weights @ values`).",
                ),
                record,
            )
        return unknown("your context could not be traced back to your dropped weights")

    # No dropped weights at all: find out why.
    for record in ops:
        if not _training(record):
            line = _source_line(path, EVAL_CALL) if path else None
            line = record.line if line is None else line
            return found(
                Diagnosis(
                    "dropout-eval",
                    "dropout kept in evaluation mode",
                    line,
                    f"{at_line(line)} puts dropout in evaluation mode, where it drops nothing, "
                    f"although this check asks for training with p = {p:g}; leave the module "
                    "in training mode (no `.eval()`), or pass `training=self.training`.",
                )
            )
    for record in ops:
        rate = _rate(record)
        if rate is not None and rate > 0 and abs(rate - p) > 1e-9:
            line = next((at for r, at in dropout_lines if abs(r - rate) < 1e-9), record.line)
            return found(
                Diagnosis(
                    "dropout-rate",
                    "a dropout rate other than the one asked for",
                    line,
                    f"{at_line(line)} uses dropout p = {rate:g} although this check asks for "
                    f"p = {p:g}; take the rate from the `dropout` argument.",
                )
            )
    if values is not None:
        undropped_context = weights @ values
        for record in records[before.index + 1 :]:
            applied = (
                _is_dropout(record)
                and isinstance(record.args[0], torch.Tensor)
                and close(record.args[0], undropped_context)
            )
            shaped = (
                record.value is not None
                and dropped_from(record.value, undropped_context, p) is not None
            )
            if applied or shaped:
                return found(
                    Diagnosis(
                        "dropout-context",
                        "dropout applied to the context instead of the weights",
                        record.line,
                        f"{at_line(record.line)} applies dropout to the context vectors; it belongs "
                        "on the attention weights, before they mix the values: "
                        "`weights = self.dropout(weights)`, then `weights @ values`.",
                    )
                )
        undropped = find(undropped_context, records, before.index + 1)
        if undropped is not None:
            # The context was made from the whole weights: nothing was dropped at p = 0.5.
            zero = next((r for r in ops if _rate(r) == 0.0), None)
            if zero is not None:
                line = next((at for r, at in dropout_lines if r == 0.0), zero.line)
                where = f"{at_line(line)} sets the dropout rate to 0"
                fix = "take the rate from the `dropout` argument"
            elif not takes_dropout:
                line = before.line
                where = "your function takes no dropout rate"
                fix = "add a `dropout` parameter and apply it to the weights after the softmax"
            else:
                line = before.line
                where = f"nothing after {at_line(line)} applies dropout to the weights"
                fix = (
                    "apply it after the softmax: `weights = self.dropout(weights)` "
                    "(or `F.dropout(weights, p)` in a function)"
                )
            return found(
                Diagnosis(
                    "dropout-ignored",
                    "the dropout rate is ignored",
                    line,
                    f"{where}, so nothing is dropped although this check asks for p = {p:g}; "
                    f"{fix}.",
                )
            )
    return unknown(
        "none of your tensors is the weights with some dropped and the rest scaled by 1/(1-p)"
    )
