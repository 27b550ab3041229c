"""Diagnosis by value: a variant's known mistakes, tried as mutations of the reference.

A variant declares its mistakes (:class:`tracer.variant.Mistake`) as changed
computations. Each is run on the reference's own context; when the learner's
output or one of their recorded tensors equals what the mistake computes (and
not what the reference computes), the mistake is named, whatever the
learner's code looks like. The line is the learner's line that produced the
first such tensor, from the operations recorded while their code ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tracer.learner.judging.compare import ATOL, close, matches_any, max_difference
from tracer.learner.judging.diagnosis import Diagnosis, Evidence, at_line
from tracer.learner.sandbox.recorder import Record
from tracer.variant import Mistake, RunContext


def _reference(evidence: Evidence) -> dict[str, list[torch.Tensor]]:
    found: dict[str, list[torch.Tensor]] = {}
    for stage in evidence.stages:
        for name, tensor in stage.tensors.items():
            if tensor.is_floating_point():
                found.setdefault(name, []).append(tensor)
    return found


_MADE: list[tuple[RunContext, Mistake, dict[str, torch.Tensor]]] = []
"""What each mistake made on the last run context asked about: a check asks twice (the
mistakes that change the output, then those that leave it), and each is computed once."""


def _made(mistake: Mistake, run: RunContext) -> dict[str, torch.Tensor]:
    if _MADE and _MADE[0][0] is not run:
        _MADE.clear()
    for _, known, made in _MADE:
        if known is mistake:
            return made
    made = _make(mistake, run)
    _MADE.append((run, mistake, made))
    return made


def _make(mistake: Mistake, run: RunContext) -> dict[str, torch.Tensor]:
    try:
        made = dict(mistake.make(run))
    except Exception:  # a mistake that does not apply to these options (or a plugin's bug)
        return {}
    return {
        str(name): tensor
        for name, tensor in made.items()
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point()
    }


def reproduce(
    evidence: Evidence,
    mistakes: Sequence[Mistake],
    run: RunContext | None,
    matched: frozenset[str] = frozenset(),
) -> list[tuple[bool, Diagnosis]]:
    """(reproduces the output, diagnosis) for each mistake the learner's tensors show.

    ``matched`` names the reference tensors the learner's code computed right before it
    diverged: a mistake that changes one of them is contradicted (the scaled scores were
    right, so the scores were scaled) and is named only if it reproduces the whole output.
    """
    if run is None or not mistakes or run.dropout > 0:
        return []
    reference = _reference(evidence)
    every = [t for tensors in reference.values() for t in tensors]
    found: list[tuple[bool, Diagnosis]] = []
    for mistake in mistakes:
        made = _made(mistake, run)
        # Only what the mistake changes tells it apart: tensors equal to the reference's are not.
        wrong = [
            tensor
            for name, tensor in made.items()
            if not any(close(tensor, r) for r in reference.get(name, []))
            and not matches_any(tensor, every)
        ]
        context = made.get("context")
        if not wrong or (context is not None and close(context, evidence.expected_output)):
            continue  # the mistake changes nothing these inputs can show
        output = evidence.output
        whole = output is not None and context is not None and close(output, context)
        hits = [r for r in evidence.records if _equals(r, wrong)]
        if not whole and not hits:
            continue
        contradicted = any(
            name in matched and not any(close(tensor, r) for r in reference.get(name, []))
            for name, tensor in made.items()
        )
        if contradicted and not whole:
            continue  # the learner computed this tensor right: the mistake is elsewhere
        made_by = [r for r in evidence.records if r.op in mistake.ops and r.line is not None]
        # A tensor on the way is where the mistake shows first; the output only says that
        # the result is wrong, so the operation the mistake changes says where, if it ran.
        steps = [r for r in hits if not (context is not None and _equals(r, [context]))]
        if steps:
            # The operation this mistake changes, when it ran on the way to that tensor,
            # is the line to fix (the scores' product, not the softmax after it).
            before = [r for r in made_by if r.index <= steps[0].index]
            line = before[-1].line if before else steps[0].line
        elif made_by:
            line = made_by[0].line
        elif hits:
            line = hits[0].line
        else:
            line = _last_line(evidence.records)
        found.append(
            (
                whole,
                Diagnosis(
                    mistake.code,
                    mistake.title,
                    line,
                    f"{at_line(line)}: your tensors equal, up to rounding, what {mistake.title} computes. "
                    f"Fix: {mistake.advice}",
                ),
            )
        )
    found.sort(key=lambda item: not item[0])  # the ones that reproduce the output first
    return found


@dataclass(frozen=True)
class Hidden:
    """A declared mistake the learner made on the way to a right output."""

    stage: str
    """The reference stage whose tensor the learner's code computed as the mistake does."""
    record: Record
    """The learner's tensor that equals the mistake's."""
    diagnosis: Diagnosis


def hidden_by_output(
    evidence: Evidence, mistakes: Sequence[Mistake], run: RunContext | None, right: frozenset[str]
) -> Hidden | None:
    """A declared mistake that leaves the output as it is, when the learner's code made it
    (one whose ``make`` gives no ``context``, or the reference's).

    Counting positions from 1 for queries and keys alike turns both one step further, and the
    scores, which depend on the distance alone, do not change: the output matches. The
    learner's rotated queries then equal the mistake's, not the reference's. ``right`` names the
    stages the learner's code computed right: a stage it also got right is not wrong.
    """
    if run is None or not mistakes or run.dropout > 0 or evidence.output is None:
        return None
    if not close(evidence.output, evidence.expected_output):
        return None  # the output is wrong: ``reproduce`` and the relations explain it
    reference = _reference(evidence)
    every = [t for tensors in reference.values() for t in tensors]
    stage_of = {
        name: stage.name
        for stage in evidence.stages
        for name, tensor in stage.tensors.items()
        if tensor.is_floating_point()
    }
    for mistake in mistakes:
        made = _made(mistake, run)
        context = made.get("context")
        if context is not None and not close(context, evidence.expected_output):
            continue  # a mistake that changes the output is for ``reproduce``
        for name, tensor in made.items():
            stage = stage_of.get(name)
            if stage is None or stage in right or matches_any(tensor, every):
                continue
            hit = next((r for r in evidence.records if _equals(r, [tensor])), None)
            if hit is None:
                continue
            made_by = [
                r
                for r in evidence.records
                if r.op in mistake.ops and r.line is not None and r.index <= hit.index
            ]
            line = made_by[-1].line if made_by else hit.line
            return Hidden(
                stage,
                hit,
                Diagnosis(
                    mistake.code,
                    mistake.title,
                    line,
                    f"{at_line(line)}: your output matches, but your {name.replace('_', ' ')} "
                    f"do not: they equal what {mistake.title} computes, a mistake that leaves the "
                    f"output as it is here. Fix: {mistake.advice}",
                ),
            )
    return None


def closer_mistake(
    evidence: Evidence, mistakes: Sequence[Mistake], run: RunContext | None
) -> Diagnosis | None:
    """For an output judged at a low precision's tolerance: a declared mistake whose output
    is clearly nearer to the learner's than the reference's is (a scale of √2 left out can
    hide inside bfloat16's rounding; the nearer one tells them apart)."""
    output = evidence.output
    if run is None or output is None or run.dropout > 0:
        return None
    gap = max_difference(output, evidence.expected_output)
    reference = _reference(evidence)
    every = [t for tensors in reference.values() for t in tensors]
    best: tuple[float, Mistake, int | None] | None = None
    for mistake in mistakes:
        made = _made(mistake, run)
        context = made.get("context")
        if context is None or tuple(context.shape) != tuple(output.shape):
            continue
        if max_difference(context, evidence.expected_output) <= ATOL:
            continue  # the mistake changes nothing these inputs show
        # A step on the way that is the mistake's and no reference tensor (unscaled scores
        # differ by √d_k, far beyond rounding), or an output clearly nearer to the mistake's.
        steps = [
            t
            for n, t in made.items()
            if n != "context"
            and not any(close(t, r) for r in reference.get(n, []))
            and not matches_any(t, every)
        ]
        hit = next((r for r in evidence.records if steps and _equals(r, steps)), None)
        nearer = max_difference(output, context)
        if hit is None and nearer * 2 >= gap:
            continue
        if best is None or nearer < best[0]:
            best = (nearer, mistake, hit.line if hit is not None else None)
    if best is None:
        return None
    _, mistake, line = best
    if line is None:
        line = next(
            (r.line for r in evidence.records if r.op in mistake.ops and r.line is not None),
            _last_line(evidence.records),
        )
    return Diagnosis(
        mistake.code,
        mistake.title,
        line,
        f"{at_line(line)}: your output is within your precision's rounding of the expected "
        f"one, but your tensors are what {mistake.title} computes. Fix: "
        f"{mistake.advice}",
    )


def _equals(record: Record, wrong: list[torch.Tensor]) -> bool:
    value = record.value
    return value is not None and value.is_floating_point() and any(close(value, w) for w in wrong)


def _last_line(records: Sequence[Record]) -> int | None:
    return next((r.line for r in reversed(records) if r.line is not None), None)


CAUSES = {"mask-unused": ("discarded-masked-fill",)}
"""Pattern diagnoses that say why a mistake's numbers came out: a masked_fill whose result
is thrown away leaves the scores unmasked, and names the line better."""


def merge(patterns: list[Diagnosis], by_value: list[tuple[bool, Diagnosis]]) -> list[Diagnosis]:
    """A mistake that reproduces the learner's output is the diagnosis; otherwise the pattern
    detectors' findings come first and the mistakes seen in intermediate tensors follow."""
    whole = [d for reproduces, d in by_value if reproduces]
    if whole:
        # The learner's output is exactly what this mistake computes: that settles it. A
        # pattern detector that names the same mistake may know its line better (where a
        # mask is built, say); in-place writes to the inputs are reported as well.
        # When these inputs cannot tell two mistakes apart (a far-off key whose weight rounds
        # to 0 hides whether the mask was shifted or dropped), the one the code shows wins.
        for candidate in whole:
            causes = {candidate.code, *CAUSES.get(candidate.code, ())}
            same = [d for d in patterns if d.code in causes]
            if same:
                break
        else:
            candidate, same = whole[0], []
        mutated = [d for d in patterns if d.code == "inputs-mutated"]
        return [*mutated, *(same[:1] or [candidate])]
    ordered = [*patterns, *(d for _, d in by_value)]
    seen: set[str] = set()
    unique = []
    for diagnosis in ordered:
        if diagnosis.code not in seen:
            seen.add(diagnosis.code)
            unique.append(diagnosis)
    return unique


def mistakes_of(variant: Any) -> tuple[Mistake, ...]:
    """The variant's declared mistakes (a variant made before they existed has none)."""
    declared = getattr(variant, "mistakes", ())
    return tuple(m for m in declared if isinstance(m, Mistake))
