"""A sentence from what the numbers show, for a divergence no known mistake explains, and a
diagnosis moved from a helper's line to the call that made the difference."""

from __future__ import annotations

import dataclasses

import torch

from tracer.learner.judging.by_value import TITLES, one_tile
from tracer.learner.judging.compare import (
    matches_any,
)
from tracer.learner.judging.diagnosis import Diagnosis, at_line
from tracer.learner.judging.relations import (
    Known,
    explain_first,
    head_splits,
    loop_rows,
    stuck_head,
    training_steps,
)
from tracer.learner.judging.results import MATCH, StageResult
from tracer.learner.judging.sandbox_request import (
    head_count,
    hidden_pairs,
    provided_arguments,
    reference_losses,
)
from tracer.learner.judging.stage_matching import mask_like
from tracer.learner.sandbox.recorder import CREATION_OPS, Record
from tracer.tracing import Trace


def through_helper(
    diagnosis: Diagnosis, records: list[Record], reference: list[torch.Tensor]
) -> Diagnosis:
    """A diagnosis at a line of a helper function, moved to the call whose arguments made the
    difference: the helper computed right for every other call (``rotate(q, 0)``) and wrong for
    this one (``rotate(k, 1)``), so the line to fix is the call; the helper's line is named
    beside it. A helper wrong for every call keeps its own line."""
    line = diagnosis.line
    if line is None:
        return diagnosis
    sites: dict[int, bool] = {}
    for record in records:
        value = record.value
        if record.line != line or not record.calls or value is None:
            continue
        if not value.is_floating_point():
            continue
        right = matches_any(value, reference)
        sites[record.calls[0]] = sites.get(record.calls[0], False) or right
    wrong = [site for site, right in sites.items() if not right]
    if len(wrong) != 1 or len(sites) < 2:
        return diagnosis
    site = wrong[0]
    message = diagnosis.message.removeprefix(f"line {line}: ")
    return dataclasses.replace(
        diagnosis,
        line=site,
        message=f"line {site}, through the helper's line {line} (right for its other calls): "
        f"{message}",
    )


MAX_RELATED = 64
"""How many of the learner's tensors after the divergence are related to the reference."""


def matched_before(stages: list[StageResult], diverging: StageResult | None) -> frozenset[str]:
    """Names of the reference tensors the learner's code got right before it diverged."""
    names: set[str] = set()
    for result in stages:
        if result is diverging:
            break
        if result.status == MATCH:
            stage = result.stage
            if stage.name in stage.tensors:
                names.add(stage.name)
            else:  # a stage whose tensors go by their own names (dQ, dK): all of them matched
                names.update(n for n, t in stage.tensors.items() if t.is_floating_point())
    return frozenset(names)


def explain_divergence(
    trace: Trace,
    diverging: StageResult | None,
    records: list[Record],
    output: torch.Tensor | None,
    output_record: Record | None,
) -> Diagnosis | None:
    """A sentence from what the numbers show, for a divergence no known mistake explains."""
    tensors: dict[str, torch.Tensor] = {}
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if tensor.is_floating_point():
                tensors.setdefault(name, tensor)
    heads = head_count(trace)
    keys = tensors.get("keys")
    width = int(keys.shape[-1]) if keys is not None else 1
    if keys is None and trace.context.weights is not None:
        width = int(trace.context.weights.key.shape[-1]) // max(heads, 1)
    hidden = hidden_pairs(trace)
    projected = [tensors[n] for n in ("queries", "keys", "values", "projected") if n in tensors]
    if heads > 1:
        per_head = {
            name: tensor
            for stage in trace.stages
            for name, tensor in stage.tensors.items()
            if tensor.dim() == 3 and tensor.is_floating_point()
        }
        stuck = stuck_head(
            [(r.value, r.line, r.index) for r in records if r.value is not None], per_head, heads
        )
        if stuck is not None:
            return stuck
        for record in records:
            if record.value is not None and record.value.dim() == 3:
                found = head_splits(record.value, projected, heads, record.line)
                if found is not None:
                    return found
    losses = reference_losses(trace)
    if losses is not None:
        found = training_steps(
            [(r.value, r.line, r.op, r.index) for r in records if r.value is not None], losses
        )
        if found is not None:
            return found
    if output is not None and trace.output is not None:
        arguments = provided_arguments(trace)
        step = loop_rows(
            output,
            trace.output,
            [(r.value, r.line, r.op, r.index) for r in records if r.value is not None],
            {n: t for n, t in arguments.items() if isinstance(t, torch.Tensor)},
        )
        if step is not None and step.code != "loop-step":
            return step
    else:
        step = None
    partial = _one_tile(diverging, records)
    if partial is not None:
        return partial
    if (
        diverging is not None
        and diverging.record is not None
        and diverging.record.value is not None
    ):
        stage = diverging.stage
        expected = stage.tensors.get(stage.name)
        if expected is None:
            expected = next(iter(stage.tensors.values()))
        start = diverging.record.index
        shape = tuple(expected.shape)
        tries = [
            r
            for r in records
            if r.index >= start
            and r.value is not None
            and tuple(r.value.shape) == shape
            and r.value.is_floating_point()
            and not mask_like(r.value)
            and r.op not in CREATION_OPS  # made to be filled in later: not a try at the stage
        ][:MAX_RELATED]
        candidates = [(r.value, r.line) for r in tries if r.value is not None]
        name = stage.name
        equations: tuple[object, ...] = stage.equations
    else:
        if output is None or trace.output is None:
            return None
        expected, name = trace.output, "output"
        line = output_record.line if output_record is not None else None
        if line is None:
            line = next((r.line for r in reversed(records) if r.line is not None), None)
        candidates = [(output, line)]
        tries = [output_record] if output_record is not None else []
        start = 0
        equations = ()
    known = Known(
        stage=name,
        expected=expected,
        tensors=tensors,
        hidden=hidden,
        heads=heads,
        head_dim=max(width, 1),
        tokens=len(trace.tokens),
        equations=equations,
    )
    found = explain_first(candidates, known)
    if step is not None and (found is None or found.code not in BY_VALUE):
        return step  # a wrong pass of a loop says more than a weaker relation of the stage
    if found is None or found.code not in REDUCING:
        return found
    made = next((r for r in tries if r.line == found.line), None)
    if made is None:
        return found
    # Which reduction went wrong (a max per column, a sum without keepdims): the last one
    # computed on the way to the tensor, in the learner's code.
    ops = {"softmax", "masked_fill", "where"} if found.code == "padding-attended" else REDUCTIONS
    reduction = next(
        (
            r
            for r in reversed(records[start : made.index + 1])
            if r.op in ops and r.line is not None
        ),
        None,
    )
    if reduction is None or reduction.line == found.line:
        return found
    message = found.message.removeprefix(f"line {found.line}: ")
    return dataclasses.replace(
        found, line=reduction.line, message=f"line {reduction.line}: {message}"
    )


def _one_tile(diverging: StageResult | None, records: list[Record]) -> Diagnosis | None:
    """A per-query stage the learner never computed whole, summed one tile per pass."""
    if diverging is None or diverging.record is not None:
        return None
    stage = diverging.stage
    expected = stage.tensors.get(stage.name, next(iter(stage.tensors.values()), None))
    if expected is None or not expected.is_floating_point():
        return None
    name = next((n for n, t in stage.tensors.items() if t is expected), stage.name)
    found = one_tile(name, expected, records, stage.formula_for(name))
    if found is None:
        return None
    line, sentence = found
    return Diagnosis("one-tile", TITLES["one-tile"], line, f"{at_line(line)}: {sentence}")


REDUCING = (
    "column-factor",
    "row-column-factor",
    "keepdims",
    "row-factor",
    "row-offset",
    "other-axis",
    "padding-attended",
)
"""Relations a reduction explains: its line is the one to fix."""
BY_VALUE = frozenset({*TITLES, "permuted", "reversed", "transposed", "scaled-by"}) - {
    "right-on-region"
}
"""Relations of a stage clear enough to say instead of the pass of a loop that went wrong."""
REDUCTIONS = frozenset({"max", "amax", "sum", "mean", "logsumexp", "amin", "min", "norm"})
