"""``attn check``: run a learner's ``attention`` next to a variant and find where they part.

1. The variant runs as usual; its stages are the reference.
2. The learner's function gets *copies* of the same inputs and weights (it can
   never corrupt the reference), and runs under a :class:`Recorder` that notes
   every torch operation with the learner's line.
3. Each reference stage is looked for among the learner's tensors. A stage
   that is missing but followed by one that is found was another route to the
   same place (the masked variant shows two); the first stage missing after
   the last one found is where the learner's computation diverges.
4. The detectors in :mod:`tracer.learner.diagnosis` name the likely mistake.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from tracer.errors import Location, UsageError
from tracer.learner.compare import close, find, matches_any, max_difference
from tracer.learner.diagnosis import Diagnosis, Evidence, diagnose
from tracer.learner.loader import LearnerFailure, learner_traceback, load_function
from tracer.learner.recorder import Record, Recorder
from tracer.tracing import Trace
from tracer.variant import Stage

ARGUMENT_ORDER = ("inputs", "W_query", "W_key", "W_value", "W_out", "b_out", "num_heads")
GIVEN_STAGES = ("inputs", "projections")
"""Stages that show what the learner is given rather than what they compute."""

MATCH = "match"
DIFFERS = "differs"
OTHER_ROUTE = "other route"


@dataclass
class StageResult:
    stage: Stage
    status: str
    record: Record | None = None
    """The learner's tensor that matched (or, for the diverging stage, the likeliest attempt)."""

    @property
    def line(self) -> int | None:
        return self.record.line if self.record is not None else None


@dataclass
class CheckResult:
    path: str
    trace: Trace
    stages: list[StageResult]
    output: Any
    output_record: Record | None
    matches: bool
    diverging: StageResult | None
    diagnoses: list[Diagnosis] = field(default_factory=list)
    problem: str | None = None
    """Why the output is unusable (not a tensor, wrong shape), if it is."""

    @property
    def expected_output(self) -> torch.Tensor:
        assert self.trace.output is not None
        return self.trace.output


def provided_arguments(trace: Trace) -> dict[str, Any]:
    """What the variant can hand a learner's function, by parameter name."""
    context = trace.context
    provided: dict[str, Any] = {"inputs": context.inputs}
    if trace.variant.uses_weights and context.weights is not None:
        provided.update(
            W_query=context.weights.query, W_key=context.weights.key, W_value=context.weights.value
        )
        for stage in trace.stages:
            if stage.name == "projections":  # multi-head variants show their own weights here
                provided.update(
                    {n: t for n, t in stage.tensors.items() if n.startswith(("W_", "b_"))}
                )
        if "W_out" in provided:
            provided["num_heads"] = _heads(trace)
    return provided


def _heads(trace: Trace) -> int:
    heads = trace.context.extra.get("heads")
    if isinstance(heads, int):
        return heads
    for stage in trace.stages:
        for tensor in stage.tensors.values():
            if tensor.dim() == 3 and tensor.shape[1] == len(trace.tokens):
                return int(tensor.shape[0])
    return 1


def expected_signature(provided: dict[str, Any]) -> str:
    return f"attention({', '.join(n for n in ARGUMENT_ORDER if n in provided)})"


def bind(
    function: Callable[..., Any], provided: dict[str, Any], path: str
) -> tuple[list[Any], dict[str, Any]]:
    """Positional arguments in the documented order, or keywords when the names say which is which."""
    expected = [n for n in ARGUMENT_ORDER if n in provided]
    signature = inspect.signature(function)
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [
        p
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    names = {p.name for p in signature.parameters.values()}
    if set(expected) <= names and all(p.name in provided for p in required):
        return [], {n: provided[n] for n in expected}
    if len(positional) >= len(expected) and len(required) <= len(expected):
        return [provided[n] for n in expected], {}
    raise UsageError(
        f"attention{signature} does not fit: it should be def {expected_signature(provided)}",
        Location(path, function.__code__.co_firstlineno),
    )


def _copy(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def candidate_shapes(trace: Trace) -> set[tuple[int, ...]]:
    shapes: set[tuple[int, ...]] = set()
    for stage in trace.stages:
        for tensor in stage.tensors.values():
            shape = tuple(tensor.shape)
            shapes.add(shape)
            if len(shape) >= 3:
                shapes.add(shape[1:])
            if len(shape) >= 2:
                shapes.add((*shape[:-2], shape[-1], shape[-2]))
    if trace.output is not None:
        shapes.add(tuple(trace.output.shape))
    return shapes


def run_learner(
    function: Callable[..., Any], trace: Trace, path: str
) -> tuple[Any, Recorder, list[str]]:
    """Call the learner's function on copies, recording; also report arguments it changed."""
    provided = provided_arguments(trace)
    originals = {n: _copy(v) for n, v in provided.items()}
    copies = {n: _copy(v) for n, v in provided.items()}
    args, kwargs = bind(function, copies, path)
    tensors = {n: v for n, v in copies.items() if isinstance(v, torch.Tensor)}
    recorder = Recorder(path, candidate_shapes(trace), tensors)
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(trace.context.seed)  # dropout can match the reference's draws
            with recorder:
                output = function(*args, **kwargs)
    except Exception as exc:
        raise LearnerFailure(learner_traceback(exc, path)) from exc
    except SystemExit as exc:
        raise LearnerFailure(f"attention() called exit({exc.code!r})\n") from exc
    changed = [
        n
        for n, v in tensors.items()
        if not torch.equal(v, originals[n]) and not (v.isnan() & originals[n].isnan()).any()
    ]
    return output, recorder, changed


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
    for stage in trace.stages:
        targets = _targets(stage)
        if stage.name in GIVEN_STAGES or not targets:
            continue
        found = [find(t, records) for t in targets]
        matched = all(r is not None for r in found)
        results.append(
            StageResult(stage, MATCH if matched else DIFFERS, found[0] if matched else None)
        )
    last = max((i for i, r in enumerate(results) if r.status == MATCH), default=-1)
    for result in results[:last]:
        if result.status == DIFFERS:
            result.status = OTHER_ROUTE
    diverging = next((r for r in results[last + 1 :] if r.status == DIFFERS), None)
    if diverging is not None:
        record = results[last].record if last >= 0 else None
        after = record.index + 1 if record is not None else 0
        diverging.record = _attempt(trace, diverging.stage, records, after)
    return results, diverging


def _attempt(trace: Trace, stage: Stage, records: list[Record], start: int) -> Record | None:
    """The learner's try at ``stage``: their first new, wrong tensor shaped like it.

    Tensors equal to some reference tensor are correct steps on the way (the
    softmax before route 1's zeroing, say), so they are passed over.
    """
    shapes = set()
    for tensor in _targets(stage):
        shapes.add(tuple(tensor.shape))
        if tensor.dim() >= 3:
            shapes.add(tuple(tensor.shape[1:]))
    reference = [t for s in trace.stages for t in s.tensors.values() if t.is_floating_point()]
    shaped = [
        record
        for record in records[start:]
        if record.value is not None
        and record.value.is_floating_point()
        and tuple(record.value.shape) in shapes
        and not _mask_like(record.value)
    ]
    for record in shaped:
        assert record.value is not None
        if not matches_any(record.value, reference):
            return record
    # Every step was right as far as it went: point at the last one, where it stopped.
    return shaped[-1] if shaped else None


def _mask_like(tensor: torch.Tensor) -> bool:
    """A mask in float form, such as ``torch.triu(torch.ones(n, n))``: not an attempt at a stage."""
    return bool(((tensor == 0) | (tensor == 1)).all())


def check(path: Path, trace: Trace) -> CheckResult:
    """Check the learner's file against a finished reference trace."""
    filename = str(path)
    function = load_function(path, expected=expected_signature(provided_arguments(trace)))
    output, recorder, changed = run_learner(function, trace, filename)
    records = recorder.records
    expected = trace.output
    assert expected is not None
    stages, diverging = compare_stages(trace, records)
    problem = None
    tensor_output: torch.Tensor | None = None
    if isinstance(output, torch.Tensor):
        tensor_output = output.detach()
        if tuple(tensor_output.shape) != tuple(expected.shape):
            problem = (
                f"attention() returned a tensor of shape {_shape(tensor_output)}; "
                f"expected {_shape(expected)}"
            )
    elif output is None:
        problem = "attention() returned None: did you forget `return`?"
    else:
        problem = f"attention() returned {type(output).__name__}, not a tensor"
    matches = problem is None and tensor_output is not None and close(tensor_output, expected)
    discarded = [
        r
        for r in records
        if r.op == "masked_fill"
        and r.result_id is not None
        and r.result_id not in recorder.used
        and recorder.tracked.get(r.result_id) is not output
    ]
    evidence = Evidence(
        records=records,
        mutations=recorder.mutations,
        discarded=discarded,
        changed_arguments=changed,
        output=tensor_output,
        expected_output=expected,
        stages=trace.stages,
    )
    diagnoses = diagnose(evidence)
    if matches and not any(d.code == "inputs-mutated" for d in diagnoses):
        diagnoses = []
    elif matches:
        matches = False
        diagnoses = [d for d in diagnoses if d.code == "inputs-mutated"]
    output_record = _output_record(records, output)
    return CheckResult(
        path=filename,
        trace=trace,
        stages=stages,
        output=tensor_output,
        output_record=output_record,
        matches=matches,
        diverging=None if matches else diverging,
        diagnoses=diagnoses,
        problem=problem,
    )


def _output_record(records: list[Record], output: Any) -> Record | None:
    for record in reversed(records):
        if record.result_id == id(output):
            return record
    return None


def _shape(tensor: torch.Tensor) -> str:
    return "×".join(map(str, tensor.shape)) or "scalar"


def largest_difference(result: CheckResult) -> float | None:
    if result.output is None or result.problem is not None:
        return None
    return max_difference(result.output, result.expected_output)
