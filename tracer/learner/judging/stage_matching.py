"""Finding each reference stage among the tensors the learner's code computed.

A stage that is missing but followed by one that is found was another route to the same
place (the masked variant shows two); the first stage missing after the last one found is
where the learner's computation diverges."""

from __future__ import annotations

import torch

from tracer.learner.judging.compare import (
    close,
    find,
    matches_any,
)
from tracer.learner.judging.results import DIFFERS, MATCH, OTHER_ROUTE, StageResult
from tracer.learner.sandbox.recorder import CREATION_OPS, REARRANGING_OPS, Record
from tracer.tracing import Trace
from tracer.variant import Stage

GIVEN_STAGES = ("inputs", "projections", "source", "given")
"""Stages that show what the learner is given rather than what they compute."""


def _targets(stage: Stage) -> list[torch.Tensor]:
    """The tensors that stand for a stage: the one named like it, else all of them."""
    if stage.name in stage.tensors:
        tensors = [stage.tensors[stage.name]]
    else:
        tensors = list(stage.tensors.values())
    return [t for t in tensors if t.is_floating_point()]


def compare_stages(
    trace: Trace, records: list[Record]
) -> tuple[list[StageResult], StageResult | None]:
    results: list[StageResult] = []
    reference = [t for s in trace.stages for t in s.tensors.values() if t.is_floating_point()]
    compared = [
        (stage, targets, [find(t, records) for t in targets])
        for stage in trace.stages
        if stage.name not in GIVEN_STAGES and (targets := _targets(stage))
    ]
    position = {id(record): i for i, record in enumerate(records)}
    for number, (stage, targets, found) in enumerate(compared):
        matched = all(r is not None for r in found)
        # Where the later stages were first computed: a transpose after them is theirs.
        later = [position[id(r)] for _, _, f in compared[number + 1 :] for r in f if r is not None]
        kept = (
            _rearranged(found[0], targets[0], records, reference, position, later)
            if matched
            else None
        )
        if kept is not None:  # right for a moment, then transposed or reordered
            results.append(StageResult(stage, DIFFERS, kept))
            continue
        results.append(
            StageResult(stage, MATCH if matched else DIFFERS, found[0] if matched else None)
        )
    last = max((i for i, r in enumerate(results) if r.status == MATCH), default=-1)
    for result in results[: max(last, 0)]:  # nothing matched: no other route either
        if result.status == DIFFERS:
            result.status = OTHER_ROUTE
    diverging = next((r for r in results[last + 1 :] if r.status == DIFFERS), None)
    if diverging is not None and diverging.record is None:
        record = results[last].record if last >= 0 else None
        after = record.index + 1 if record is not None else 0
        diverging.record = _attempt(trace, diverging.stage, records, after)
    return results, diverging


def _rearranged(
    found: Record | None,
    expected: torch.Tensor,
    records: list[Record],
    reference: list[torch.Tensor],
    position: dict[int, int],
    later: list[int],
) -> Record | None:
    """What the learner's code made of a stage it got right on the way, when it transposed or
    permuted it before using it: ``weights = torch.softmax(s, dim=-1).T`` (the line assigns
    the transpose), or ``weights = weights.T`` on a later line. The stage is then not right.

    None when the tensor is still right (a symmetric one transposed is itself), or when the
    rearranged one only serves a later stage within an expression that comes out right
    (``(values.T @ weights.T).T``, the context by another route). ``position`` gives each
    record's place in ``records``; ``later``, where the later stages were first computed."""
    if found is None or found.line is None or found.value is None:
        return None
    start = position[id(found)]
    shape = tuple(expected.shape)
    if tuple(found.value.shape) != shape:  # matched head by head (see ``find``)
        return _heads_reordered(records[start + 1 :], expected, reference)
    end = _line_end(records, start)
    line = records[start + 1 : end]
    assigned = _assigned(line, shape)
    if assigned is not None:
        upto = next(i for i, r in enumerate(line) if r is assigned)
        if any(r.op in REARRANGING_OPS for r in line[: upto + 1]):
            assert assigned.value is not None
            moved_on = any(
                r.value is not None
                and tuple(r.value.shape) == shape
                and matches_any(r.value, reference)
                and not close(r.value, expected)
                for r in line[:upto]
            )
            return None if moved_on or matches_any(assigned.value, reference) else assigned
    stop = min((p for p in later if p > start), default=len(records))
    for index in range(end, stop):  # ``weights = weights.T`` on a line of its own
        record = records[index]
        value = record.value
        if (
            record.op in REARRANGING_OPS
            and value is not None
            and value.is_floating_point()
            and tuple(value.shape) == shape
            and value.dim() >= 2
            and close(value.mT, found.value)
            and not matches_any(value, reference)
            and _assigned(records[index : _line_end(records, index)], shape) is record
        ):
            return record
    return None


def _heads_reordered(
    later: list[Record], expected: torch.Tensor, reference: list[torch.Tensor]
) -> Record | None:
    """The first whole (heads, ...) tensor the learner made from heads each right on their
    own, when it holds them in another order (``torch.stack(heads[::-1])``)."""
    count = expected.shape[0]
    for record in later:
        value = record.value
        if value is None or tuple(value.shape) != tuple(expected.shape):
            continue
        if not value.is_floating_point() or close(value, expected):
            return None
        if matches_any(value, reference):  # another stage's tensor, of the same shape
            continue
        order: list[int] = []
        for head in range(count):
            at = next(
                (j for j in range(count) if j not in order and close(value[head], expected[j])),
                None,
            )
            if at is None:
                break
            order.append(at)
        if len(order) == count and order != list(range(count)):
            return record
    return None


def _line_end(records: list[Record], index: int) -> int:
    end = index + 1
    while end < len(records) and records[end].line == records[index].line:
        end += 1
    return end


METADATA_OPS = frozenset({"shape", "size", "dim", "numel", "ndim", "dtype", "device", "__len__"})
"""Operations that read about a tensor and make none: they may follow what a line assigns."""


def _assigned(line: list[Record], shape: tuple[int, ...]) -> Record | None:
    """The tensor a line ends with (what it assigns or returns), when it has ``shape``: its
    last operation, bar ones that only read a size."""
    made = [r for r in line if r.op not in METADATA_OPS]
    if not made:
        return None
    last = made[-1]
    if last.value is None or not last.value.is_floating_point() or tuple(last.value.shape) != shape:
        return None
    return last


def _attempt(trace: Trace, stage: Stage, records: list[Record], start: int) -> Record | None:
    """The learner's try at ``stage``: their first new, wrong tensor shaped like it.

    Tensors equal to a reference tensor of this stage or a later one, or to a
    by-product of an earlier one (the softmax before route 1's zeroing, say),
    are correct steps on the way and are passed over. A tensor equal to an
    earlier stage's own result is not: keys computed with W_query equal the
    queries, and are still a wrong attempt at the keys.
    """
    shapes = set()
    for tensor in _targets(stage):
        shapes.add(tuple(tensor.shape))
        if tensor.dim() >= 3:
            shapes.add(tuple(tensor.shape[1:]))
    earlier = [id(t) for s in trace.stages if s.index < stage.index for t in _targets(s)]
    reference = [
        t
        for s in trace.stages
        for t in s.tensors.values()
        if t.is_floating_point() and id(t) not in earlier
    ]
    shaped = [
        record
        for record in records[start:]
        if record.value is not None
        and record.value.is_floating_point()
        and tuple(record.value.shape) in shapes
        and not mask_like(record.value)
        and record.op not in CREATION_OPS
    ]
    for record in shaped:
        assert record.value is not None
        if not matches_any(record.value, reference):
            return record
    # Every step was right as far as it went: point at the last one, where it stopped.
    return shaped[-1] if shaped else None


def mask_like(tensor: torch.Tensor) -> bool:
    """A mask in float form, such as ``torch.triu(torch.ones(n, n))`` or an additive mask of
    0 and -1e9 (or -inf): not an attempt at a stage."""
    if bool(((tensor == 0) | (tensor == 1)).all()):
        return True
    return bool(((tensor == 0) | (tensor <= -1e4)).all()) and bool((tensor == 0).any())
