"""``attn check``: run a learner's ``attention`` next to a variant and find where they part.

1. The variant runs as usual, in this process; its stages are the reference.
2. The learner's code runs in a sandbox process on copies of the same inputs and
   weights (it can never reach the reference), under a :class:`Recorder` that
   notes every torch operation with the learner's line; what comes back is
   checked before it is used.
3. Each reference stage is looked for among the learner's tensors. A stage
   that is missing but followed by one that is found was another route to the
   same place (the masked variant shows two); the first stage missing after
   the last one found is where the learner's computation diverges.
4. The detectors in :mod:`tracer.learner.diagnosis` name the likely mistake.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from tracer.errors import UsageError
from tracer.learner.by_value import TITLES, one_tile, tile_shapes
from tracer.learner.calling import ARGUMENT_ORDER, normal_name
from tracer.learner.compare import (
    ATOL,
    close,
    find,
    judged_at,
    matches_any,
    max_difference,
    precision_of,
    tolerance_for,
)
from tracer.learner.diagnosis import Diagnosis, Evidence, at_line, diagnose
from tracer.learner.dropout import CHECK_RATE, DropoutCheck, check_dropout
from tracer.learner.isolation import Limits, Outcome, run_sandboxed
from tracer.learner.loader import read_source
from tracer.learner.mutations import (
    closer_mistake,
    hidden_by_output,
    merge,
    mistakes_of,
    reproduce,
)
from tracer.learner.recorder import REARRANGING_OPS, Mutation, Record
from tracer.learner.relations import (
    Known,
    explain_first,
    head_splits,
    loop_rows,
    stuck_head,
    training_steps,
)
from tracer.learner.second_looks import EVAL_DROPOUT, LOOKS
from tracer.tracing import Trace
from tracer.variant import Stage

NOTE_WIDTH = 88
"""The width the notes of a second run are wrapped to (the report's width)."""

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost

GIVEN_STAGES = ("inputs", "projections", "source", "given")
"""Stages that show what the learner is given rather than what they compute."""
GIVEN = "given"
"""A stage that holds what a learner's code is handed, by parameter name (``inputs`` in place
of the run's inputs; a 0-d integer tensor as an int): a reference for a real model's layer
hands over its input and its weights in the model's own layout."""

CREATION_OPS = frozenset(
    {"empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like"}
)
"""Making a tensor to fill in later (``torch.empty(n, n)``) is not an attempt at a stage."""

MATCH = "match"
DIFFERS = "differs"
OTHER_ROUTE = "other route"
OWN_MASK = "own mask"
"""With dropout on: the learner's tensor has the right structure (its own random mask)."""
AFTER_DROPOUT = frozenset({"dropout-unused", "dropout-twice"})
"""Mistakes made after a dropout that is right in itself."""
NOT_COMPARED = "not compared"
"""With dropout on: a stage after the masks part ways, not compared value by value."""


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
    called: str = ""
    """What ran: ``function attention``, ``class CausalAttention(d_in=3, ...)``."""
    note: str | None = None
    """Why that was picked, when the file has no ``attention``."""
    learner_output: str = ""
    """What the learner's code printed (stdout, then stderr)."""
    dropout: DropoutCheck | None = None
    """With dropout on: what the structure of the learner's dropout showed."""
    takes_dropout: bool = False
    """Whether the learner's code was handed the dropout rate (so a run with dropout means something)."""
    precision: torch.dtype | None = None
    """float16 or bfloat16 when the learner's code computed in it: compared at its tolerance."""

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
    for stage in trace.stages:
        if stage.name == GIVEN:
            provided.update(
                {
                    n: int(t) if t.dim() == 0 and not t.is_floating_point() else t
                    for n, t in stage.tensors.items()
                }
            )
    source = context.source
    if source is not None:  # cross-attention: keys and values come from the source
        provided["source"] = source.inputs
        if "W_key" in provided and source.weights is not None:
            provided["W_key"], provided["W_value"] = source.weights.key, source.weights.value
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
            shapes.update(tile_shapes(tensor))
    if trace.output is not None:
        shapes.add(tuple(trace.output.shape))
        if trace.output.dim() == 2:  # one row at a time: decode steps, a loop over queries
            shapes.add(tuple(trace.output.shape[-1:]))
    if _losses(trace) is not None:
        shapes.add(())  # each training step's loss
    return shapes


def _losses(trace: Trace) -> torch.Tensor | None:
    """The loss before each training step, for a variant that trains (its ``steps`` stage)."""
    for stage in trace.stages:
        loss = stage.tensors.get("loss")
        if stage.name == "steps" and loss is not None and loss.dim() == 1:
            return loss
    return None


def sandbox_request(trace: Trace, function: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(request, tensors) for the sandbox: everything the learner's code may be given."""
    provided = provided_arguments(trace)
    tensors = {n: v.detach().clone() for n, v in provided.items() if isinstance(v, torch.Tensor)}
    inputs = provided["inputs"]
    query = tensors.get("W_query")
    stacked = query is not None and query.dim() == 3
    d_out = int(query.shape[-1]) if query is not None else int(inputs.shape[-1])
    stage_names = {s.name for s in trace.stages}
    hidden = hidden_pairs(trace)
    if hidden is not None:
        tensors[HIDDEN] = hidden
    request = {
        "function": function,
        "num_heads": provided["num_heads"]
        if "num_heads" in provided
        else (_heads(trace) if stacked else None),
        "heads_argument": "num_heads" in provided,
        "shapes": sorted(candidate_shapes(trace)),
        "seed": trace.context.seed,
        "d_in": int(inputs.shape[-1]),
        "d_out": d_out,
        "context_length": int(inputs.shape[0]),
        "d_source": None if "source" not in provided else int(provided["source"].shape[-1]),
        "dropout": float(trace.context.dropout),
        "causal": "mask" in stage_names,
        "stacked": stacked,
        "output_names": output_names(trace),
        "variant_options": {
            **{
                k: v
                for k, v in trace.context.extra.items()
                if isinstance(v, (bool, int, float)) and k not in ("heads", "num_heads")
            },
            **{  # a given stage's other integers (kv_heads), as options are
                k: v for k, v in provided.items() if isinstance(v, int) and k != "num_heads"
            },
        },
    }
    return request, tensors


def output_names(trace: Trace) -> list[str]:
    """The reference's names for its output (``dX`` and ``grad_inputs`` for a backward pass):
    a field of a returned dict or dataclass named like one of them is the output."""
    expected = trace.output
    names: list[str] = []
    if expected is None:
        return names
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if tensor.is_floating_point() and close(tensor, expected):
                names += [name, stage.name]
    return list(dict.fromkeys(names))


HIDDEN = "__hidden__"
"""The sandbox's name for the (query, key) pairs the reference hides (for code that takes a mask)."""


def hidden_pairs(trace: Trace) -> torch.Tensor | None:
    """(query, key) pairs the reference hides, True where hidden: from its masked scores."""
    n = len(trace.tokens)
    for stage in trace.stages:
        masked = stage.tensors.get("masked_scores")
        if masked is not None and tuple(masked.shape) == (n, n):
            return torch.isneginf(masked)
    for stage in trace.stages:
        if stage.name != "mask":
            continue
        found = [t for t in stage.tensors.values() if t.dtype == torch.bool and t.shape == (n, n)]
        if found:
            return found[-1]
    return None


def refuse_overflow(trace: Trace) -> None:
    """Inputs whose attention overflows float32 give nothing to compare: say so up front."""
    context = trace.context
    inputs = context.inputs.double()
    problem = not bool(inputs.isfinite().all())
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if not tensor.is_floating_point():
                continue
            # Overflow shows as infinity; a NaN alone may be 0/0 in a by-product (one token
            # of zeros), and -inf is what masked scores hold on purpose.
            bad = tensor == float("inf")
            if "mask" not in name:
                bad = bad | (tensor == float("-inf"))
            if bool(bad.any()):
                problem = True
    if not problem:
        return
    # Scores grow with the square of the inputs: |q·k| <= d_out (d_in m w_q)(d_in m w_k).
    d_in = inputs.shape[-1]
    bound = float(d_in)
    if context.weights is not None:
        weights = [
            float(w.double().abs().max())
            for w in (context.weights.query, context.weights.key, context.weights.value)
        ]
        bound = d_in * d_in * context.weights.query.shape[-1] * max(weights) ** 2
    safe = math.sqrt(float(torch.finfo(torch.float32).max) / 100 / max(bound, 1e-300))
    raise UsageError(
        "these inputs are too large: their attention scores overflow float32, so "
        f"there is nothing to compare with; keep every embedding value within ±{safe:.3g}"
    )


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
        and not _mask_like(record.value)
        and record.op not in CREATION_OPS
    ]
    for record in shaped:
        assert record.value is not None
        if not matches_any(record.value, reference):
            return record
    # Every step was right as far as it went: point at the last one, where it stopped.
    return shaped[-1] if shaped else None


def _mask_like(tensor: torch.Tensor) -> bool:
    """A mask in float form, such as ``torch.triu(torch.ones(n, n))`` or an additive mask of
    0 and -1e9 (or -inf): not an attempt at a stage."""
    if bool(((tensor == 0) | (tensor == 1)).all()):
        return True
    return bool(((tensor == 0) | (tensor <= -1e4)).all()) and bool((tensor == 0).any())


def reference_host(variant: str, everything: Callable[[], PluginHost]) -> PluginHost:
    """The plugins the reference comes from: for a built-in variant, the built-ins alone.

    A third-party plugin runs code when it is imported (it may replace
    ``torch.softmax``); the reference for a built-in variant is computed with no
    such plugin imported, so none can turn a wrong file into a pass. Only for
    other variants are all plugins loaded (``everything()``).
    """
    builtins = _builtin_host()
    if variant in builtins.variants:
        return builtins
    return everything()


@functools.cache
def _builtin_host() -> PluginHost:
    """Loaded once per process: a watch session re-checks without reading entry points again."""
    from tracer.plugin_host import PluginHost

    return PluginHost(use_env=False, builtins_only=True, strict=False)


def check(
    path: Path,
    trace: Trace,
    *,
    function: str | None = None,
    limits: Limits | None = None,
    eval_dropout: float | None = None,
) -> CheckResult:
    """Check the learner's file against a finished reference trace.

    The learner's code runs in a sandbox process (:mod:`tracer.learner.sandbox`);
    everything it sends back is checked here before it is compared.
    """
    filename = str(path)
    read_source(path)
    refuse_overflow(trace)
    request, tensors = sandbox_request(trace, function)
    if eval_dropout is not None:
        request["eval_dropout"] = eval_dropout
    outcome = run_sandboxed(filename, request, tensors, limits or Limits.from_environment())
    payload = outcome.payload
    records = [r for r in map(_record, _list(payload.get("records"))) if r is not None]
    given = payload.get("output")
    returned = given.get("tensor") if isinstance(given, dict) else None
    precision = precision_of([r.value for r in records] + [_usable(returned)])
    with judged_at(precision):
        return _judged(filename, trace, outcome, tensors, records, precision)


def _judged(
    filename: str,
    trace: Trace,
    outcome: Outcome,
    tensors: dict[str, Any],
    records: list[Record],
    precision: torch.dtype | None,
) -> CheckResult:
    """The verdict on what came back from the sandbox, at the tolerance of the learner's
    precision (inside :func:`judged_at`)."""
    payload = outcome.payload
    by_index = {r.index: r for r in records}
    mutations = [
        Mutation(str(m[0]), str(m[1]), m[2] if isinstance(m[2], int) else None)
        for m in _list(payload.get("mutations"))
        if isinstance(m, (list, tuple)) and len(m) == 3
    ]
    changed = _changed(
        {n: t for n, t in tensors.items() if n != HIDDEN}, payload.get("arguments_after")
    )
    expected = trace.output
    assert expected is not None
    stages, diverging = compare_stages(trace, records)
    given = payload.get("output")
    output: dict[str, Any] = given if isinstance(given, dict) else {}
    output, picked = pick_field(output, expected)
    tensor_output, problem = checked_output(output, expected)
    if problem is None and isinstance(output.get("weights"), torch.Tensor):
        problem = _returned_weights(output["weights"], trace)
    if problem is None and isinstance(output.get("fields"), dict):
        problem = _returned_fields(output["fields"], trace)
    note = payload.get("note") if isinstance(payload.get("note"), str) else None
    if picked is not None:
        note = picked if note is None else f"{note}; {picked}"
    matches = problem is None and tensor_output is not None and close(tensor_output, expected)
    discarded = [by_index[i] for i in _list(payload.get("discarded")) if i in by_index]
    evidence = Evidence(
        records=records,
        mutations=mutations,
        discarded=discarded,
        changed_arguments=changed,
        output=tensor_output,
        expected_output=expected,
        stages=trace.stages,
        dropout=float(trace.context.dropout),
        dropout_lines=[
            (float(item[0]), item[1])
            for item in _list(payload.get("dropout_lines"))
            if isinstance(item, (list, tuple))
            and len(item) == 2
            and isinstance(item[0], (int, float))
            and isinstance(item[1], int)
        ],
        path=filename,
        arguments={n: t for n, t in tensors.items() if n != HIDDEN},
    )
    matched = _matched_before(stages, diverging)
    diagnoses = merge(
        diagnose(evidence),
        reproduce(evidence, mistakes_of(trace.variant), trace.context, matched),
    )
    takes_dropout = payload.get("takes_dropout") is True
    dropout = check_dropout(
        trace.stages,
        records,
        float(trace.context.dropout),
        output=tensor_output,
        path=filename,
        dropout_lines=evidence.dropout_lines,
        takes_dropout=takes_dropout,
    )
    if dropout is not None:
        # The masks differ (numpy's draws against torch's): judge by structure instead.
        matches, problem, diagnoses, diverging = _judge_dropout(
            dropout, stages, diverging, output, tensor_output, problem, diagnoses
        )
    if matches and dropout is None and precision is not None:
        nearer = closer_mistake(evidence, mistakes_of(trace.variant), trace.context)
        if nearer is not None:  # within float16's rounding, and nearer to a known mistake
            matches = False
            diagnoses = [*(d for d in diagnoses if d.code == "inputs-mutated"), nearer]
    if matches and dropout is None:
        # A declared mistake that leaves the output as it is (positions counted from 1 for
        # queries and keys alike): the learner's stage still differs, and that is said.
        right = frozenset(r.stage.name for r in stages if r.status == MATCH)
        hidden = hidden_by_output(evidence, mistakes_of(trace.variant), trace.context, right)
        if hidden is not None:
            matches = False
            for stage_result in stages:
                if stage_result.stage.name == hidden.stage:
                    stage_result.status, stage_result.record = DIFFERS, hidden.record
                    diverging = stage_result
            diagnoses = [*(d for d in diagnoses if d.code == "inputs-mutated"), hidden.diagnosis]
    if matches:
        for stage_result in stages:  # numpy, torch's own modules: stages it never showed us
            if stage_result.status == DIFFERS:
                stage_result.status = OTHER_ROUTE
    if matches and not any(d.code == "inputs-mutated" for d in diagnoses):
        diagnoses = []
    elif matches:
        matches = False
        diagnoses = [d for d in diagnoses if d.code == "inputs-mutated"]
    output_id = output.get("id")
    output_record = next(
        (r for r in reversed(records) if output_id is not None and r.result_id == output_id), None
    )
    right_output = tensor_output is not None and close(tensor_output, expected)
    if (
        not matches
        and not diagnoses
        and dropout is None
        and float(trace.context.dropout) == 0
        and not right_output  # the output is right; what is wrong (a field) is said already
    ):
        # With dropout on, the masks differ by design: a relation of the values says nothing.
        found = explain_divergence(trace, diverging, records, tensor_output, output_record)
        diagnoses = [found] if found is not None else []
    reference = [t for s in trace.stages for t in s.tensors.values() if t.is_floating_point()]
    diagnoses = [through_helper(d, records, reference) for d in diagnoses]
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
        called=str(payload.get("called") or ""),
        note=note,
        learner_output=outcome.output,
        dropout=dropout,
        takes_dropout=takes_dropout,
        precision=precision,
    )


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


def _judge_dropout(
    dropout: DropoutCheck,
    stages: list[StageResult],
    diverging: StageResult | None,
    output: dict[str, Any],
    tensor_output: torch.Tensor | None,
    problem: str | None,
    diagnoses: list[Diagnosis],
) -> tuple[bool, str | None, list[Diagnosis], StageResult | None]:
    """(matches, problem, diagnoses, diverging) once the dropout's structure is known."""
    mutated = [d for d in diagnoses if d.code == "inputs-mutated"]
    names = [r.stage.name for r in stages]
    if "dropout" not in names:
        return False, problem, diagnoses, diverging
    at = names.index("dropout")
    returned = output.get("weights")
    if isinstance(returned, torch.Tensor) and dropout.dropped is not None:
        mine = dropout.dropped.value
        if mine is not None and close(returned, mine):
            problem = None if problem and problem.startswith("the attention weights") else problem
    if dropout.verified:
        stages[at].status, stages[at].record = OWN_MASK, dropout.dropped
        for result in stages[at + 1 :]:
            if result.stage.name == dropout.context_stage:
                result.status, result.record = OWN_MASK, dropout.context
            else:
                result.status, result.record = NOT_COMPARED, None
        ok = problem is None and tensor_output is not None
        return ok, problem, mutated, None
    for result in stages[at:]:
        if result.status != MATCH:
            result.status, result.record = NOT_COMPARED, None
    if dropout.diagnosis is not None:
        wrong = stages[at]
        if diverging is not None and names.index(diverging.stage.name) < at:
            # Dropout moved before the softmax: the weights already differ.
            return False, problem, [*mutated, dropout.diagnosis], diverging
        if dropout.diagnosis.code in AFTER_DROPOUT:
            # The dropout itself was right; what follows it is not.
            stages[at].status, stages[at].record = OWN_MASK, dropout.dropped
            wrong = next(
                (r for r in stages[at + 1 :] if r.stage.name == dropout.context_stage), wrong
            )
        wrong.status, wrong.record = DIFFERS, None
        if wrong is stages[at]:
            wrong.record = dropout.dropped
        return False, problem, [*mutated, dropout.diagnosis], wrong
    if diverging is not None and names.index(diverging.stage.name) < at:
        return False, problem, diagnoses, diverging  # an ordinary mistake before dropout
    note = (
        f"with dropout on (p = {dropout.rate:g}) nothing after the weights could be checked: "
        f"{dropout.note}"
    )
    return False, problem or note, mutated, None


def hidden_scaling_d_out(trace: Trace) -> int | None:
    """A d_out at which √d_k is no longer 1, when this trace's scaling changes nothing.

    With heads one column wide (the multi-head defaults) dividing by √d_k is
    dividing by 1, so a missing scale would pass; the check is then run again
    at twice the width.
    """
    scores, scaled = _main(trace, "scores"), _main(trace, "scaled")
    weights = trace.context.weights
    if scores is None or scaled is None or weights is None or trace.context.init is None:
        return None
    if not close(scores, scaled):
        return None
    return int(weights.query.shape[-1]) * 2


def hides_dropout(trace: Trace, result: CheckResult) -> bool:
    """Whether this check ran with dropout off on a variant that has dropout, for code that takes
    the rate: a second run with dropout on can then show a dropout that is ignored or misplaced."""
    has_stage = any(stage.name == "dropout" for stage in trace.stages)
    return has_stage and trace.context.dropout == 0 and result.takes_dropout


def _main(trace: Trace, name: str) -> torch.Tensor | None:
    for stage in trace.stages:
        if stage.name == name and name in stage.tensors:
            return stage.tensors[name]
    return None


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _usable(value: Any) -> torch.Tensor | None:
    """A tensor the comparisons can trust: dense, on the CPU, real."""
    if not isinstance(value, torch.Tensor) or type(value) is not torch.Tensor:
        return None
    if value.layout != torch.strided or value.device.type != "cpu" or value.is_complex():
        return None
    return value


def _plain_args(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return _usable(value)
    if isinstance(value, list):
        return tuple(_plain_args(v) for v in value)
    return value


def _record(data: Any) -> Record | None:
    if not isinstance(data, dict) or not isinstance(data.get("index"), int):
        return None
    line = data.get("line")
    result_id = data.get("result_id")
    kwargs = data.get("kwargs")
    args = _plain_args(data.get("args"))
    return Record(
        index=data["index"],
        op=str(data.get("op")),
        line=line if isinstance(line, int) else None,
        value=_usable(data.get("value")),
        inplace=bool(data.get("inplace")),
        args=args if isinstance(args, tuple) else (),
        kwargs={str(k): _plain_args(v) for k, v in kwargs.items()}
        if isinstance(kwargs, dict)
        else {},
        result_id=result_id if isinstance(result_id, int) else None,
        calls=tuple(c for c in _list(data.get("calls")) if isinstance(c, int)),
    )


def _changed(given: dict[str, torch.Tensor], after: Any) -> list[str]:
    """Arguments whose values differ after the learner's call (compared here, not there)."""
    if not isinstance(after, dict):
        return []
    changed = []
    for name, original in given.items():
        value = after.get(name)
        if value is None:
            continue
        value = _usable(value)
        if value is None or tuple(value.shape) != tuple(original.shape):
            changed.append(name)
            continue
        same = (value.double() == original.double()) | (value.isnan() & original.isnan())
        if not bool(same.all()):
            changed.append(name)
    return changed


def checked_output(
    output: dict[str, Any], expected: torch.Tensor
) -> tuple[torch.Tensor | None, str | None]:
    """The learner's result if it is a real floating CPU tensor of the reference's shape; else why not."""
    value = output.get("tensor")
    if value is None:
        kind = output.get("type")
        if kind == "None":
            return None, "attention() returned None: did you forget `return`?"
        return None, f"attention() returned {kind or 'nothing usable'}, not a tensor"
    if isinstance(value, dict):
        return None, f"attention() returned {value.get('problem', 'an unusable tensor')}"
    if not isinstance(value, torch.Tensor):
        return None, "attention() returned something that is not a tensor"
    if value.is_complex():
        return None, (
            f"attention() returned a complex tensor ({value.dtype}); attention is real: "
            "drop whatever made it complex"
        )
    if not value.is_floating_point():
        return None, (
            f"attention() returned a {value.dtype} tensor; context vectors are floating point "
            "(did an integer tensor or a comparison slip in?)"
        )
    if tuple(value.shape) != tuple(expected.shape):
        return value, (
            f"attention() returned a tensor of shape {_shape(value)}; expected {_shape(expected)}"
        )
    bad = ~value.isfinite()
    if bool(bad.any()):
        nan, inf = int(value.isnan().sum()), int(value.isinf().sum())
        parts = [f"{nan} NaN" if nan else "", f"{inf} infinite" if inf else ""]
        return value, (
            f"attention() returned {' and '.join(p for p in parts if p)} value"
            f"{'s' if nan + inf > 1 else ''} out of {value.numel()}"
        )
    return value, None


def pick_field(output: dict[str, Any], expected: torch.Tensor) -> tuple[dict[str, Any], str | None]:
    """A returned dict or dataclass of several tensors, none named as the output: the field
    that equals the expected output, else the one shaped like it (the last, when several are).
    Returns the output with that field as its tensor, and a note saying which was compared."""
    fields = output.get("fields")
    if "tensor" in output or not isinstance(fields, dict):
        return output, None
    usable = {str(k): u for k, v in fields.items() if (u := _usable(v)) is not None}
    shaped = [k for k, v in usable.items() if tuple(v.shape) == tuple(expected.shape)]
    equal = [k for k in shaped if usable[k].is_floating_point() and close(usable[k], expected)]
    if not shaped:
        names = ", ".join(usable) or "none"
        return {
            **output,
            "type": f"{output.get('type', 'dict')} of tensors ({names}), none {_shape(expected)}",
        }, None
    name = (equal or shaped)[-1]
    ids = output.get("field_ids")
    picked = {
        **output,
        "tensor": usable[name],
        "id": ids.get(name) if isinstance(ids, dict) else None,
        "fields": {k: v for k, v in usable.items() if k != name},
    }
    how = "it equals the expected output" if equal else f"it is the one shaped {_shape(expected)}"
    where = f"its ['{name}']" if output.get("dict") else f"its field {name}"
    kind = "a dict" if output.get("dict") else f"a {output.get('type')}"
    return picked, f"it returned {kind} of several tensors, and {where} was compared ({how})"


def _returned_fields(fields: dict[str, Any], trace: Trace) -> str | None:
    """Every other returned field named like a reference tensor or stage (``dQ``, ``grad_q``,
    ``weights``) must hold one of the reference's tensors: a wrong gradient beside a right
    output is still wrong. Fields named like nothing the variant has are not judged."""
    named: dict[str, tuple[str, torch.Tensor]] = {}
    every: list[torch.Tensor] = []
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if not tensor.is_floating_point():
                continue
            every.append(tensor)
            named.setdefault(normal_name(name), (stage.name, tensor))
            if name == stage.name or len(stage.tensors) == 1:
                named.setdefault(normal_name(stage.name), (stage.name, tensor))
    for field_name, value in fields.items():
        value = _usable(value)
        known = named.get(normal_name(str(field_name)))
        if value is None or known is None or not value.is_floating_point():
            continue
        stage_name, tensor = known
        if tuple(value.shape) != tuple(tensor.shape) or matches_any(value, every):
            continue
        return (
            f"the {field_name} your function returns differs from the '{stage_name}' stage "
            f"(largest difference {max_difference(value, tensor):.3g})"
        )
    return None


def _returned_weights(weights: torch.Tensor, trace: Trace) -> str | None:
    """Weights returned next to the context must be the reference's (after dropout, if any)."""
    wanted = [s.tensors["weights"] for s in trace.stages if "weights" in s.tensors]
    if not wanted:
        return None
    value = _usable(weights)
    if value is not None and value.is_floating_point() and any(close(value, w) for w in wanted):
        return None
    return (
        "the attention weights your function returns (second value) differ from the 'weights' stage"
    )


def _shape(tensor: torch.Tensor) -> str:
    return "×".join(map(str, tensor.shape)) or "scalar"


def precision_note(result: CheckResult) -> str | None:
    """What the learner's precision says about the gap: within what float16 can hold, more
    than it explains, or (computing in float32) of the size a lower precision makes."""
    difference = largest_difference(result)
    if difference is None or any(d.code != "differs" for d in result.diagnoses):
        return None  # a mistake is named: its gap is no matter of precision
    dtype = result.precision
    if dtype is not None:
        name, tolerance = str(dtype).removeprefix("torch."), tolerance_for(dtype)
        if result.matches:
            return (
                f"your {name} arithmetic differs by at most {short(difference)}, within what "
                f"{name} can hold (compared at {name}'s tolerance, {short(tolerance)} relative, "
                "instead of 1e-5)"
            )
        if difference <= PRECISION_SIZED * tolerance:
            return (
                f"the gap ({short(difference)}) is more than {name}'s precision explains (up to "
                f"{short(tolerance)}) but of its size: keep the sums and the softmax in float32, "
                "or look for a small constant added"
            )
        return None
    if not result.matches and ATOL < difference <= tolerance_for(torch.float16):
        return (
            f"a gap this small ({short(difference)}) is of the size a lower precision makes: "
            "look for a step computed in float16 or bfloat16, or a small constant (an epsilon) "
            "added"
        )
    return None


PRECISION_SIZED = 4


def short(number: float) -> str:
    """A small number as one significant digit: ``5e-4``."""
    mantissa, exponent = f"{number:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


"""A gap up to this many times the precision's tolerance is called one of precision."""


def largest_difference(result: CheckResult) -> float | None:
    """None when there is nothing to measure, or dropout is on (the masks differ by chance)."""
    if result.output is None or result.problem is not None or result.dropout is not None:
        return None
    return max_difference(result.output, result.expected_output)


# The re-check policy ---------------------------------------------------------
#
# A pass under one set of options can hide a mistake that another would show.
# After a pass the file is checked again under each configuration below that
# applies, in order; ``attn check`` and ``attn exercises watch`` both judge
# through :func:`judge`, so they always agree. To add a configuration, add a
# :class:`Recheck` to :data:`RECHECKS`.

Rerun = Callable[[dict[str, Any]], Trace]
"""A finished reference trace of the same variant with some trace options changed."""


@dataclass(frozen=True)
class Recheck:
    """One more configuration a passing file is checked in."""

    key: str
    """Its field in ``attn check --json`` (``second``, ``with_dropout``, ``without_dropout``)."""
    changes: Callable[[Trace, CheckResult, CheckResult, dict[str, Any]], dict[str, Any] | None]
    """(reference, first result, the result that stands so far, changes of the rechecks that
    replaced it) -> the trace options to change, or None when this recheck does not apply."""
    overturns: Callable[[CheckResult], bool]
    """Whether this recheck's result turns the pass into a failure."""
    why: Callable[[Trace, dict[str, Any]], str]
    """The line shown above the recheck's report when it overturns the pass."""
    replaces: bool = False
    """Its result stands for the check from then on (later rechecks build on it)."""
    passed_note: Callable[[CheckResult], str] | None = None
    """A line added under a pass that this recheck confirmed."""


def _wider(
    trace: Trace, first: CheckResult, passed: CheckResult, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    wider = hidden_scaling_d_out(trace) if first.matches else None
    return None if wider is None else {"d_out": wider}


def _dropout_on(
    trace: Trace, first: CheckResult, passed: CheckResult, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    return {"dropout": CHECK_RATE} if passed.matches and hides_dropout(trace, first) else None


MAX_RELATED = 64
"""How many of the learner's tensors after the divergence are related to the reference."""


def _matched_before(stages: list[StageResult], diverging: StageResult | None) -> frozenset[str]:
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
    heads = _heads(trace)
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
    losses = _losses(trace)
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
            and not _mask_like(r.value)
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


def _dropout_off(
    trace: Trace, first: CheckResult, passed: CheckResult, earlier: dict[str, Any]
) -> dict[str, Any] | None:
    if passed.matches and any(r.status == NOT_COMPARED for r in passed.stages):
        return {"dropout": 0.0, **earlier}
    return None


def dropout_line(result: CheckResult, rate: float) -> str:
    """What the second run, with dropout on, added to a check that passed with it off."""
    if result.matches:
        text = (
            f"checked again with --dropout {rate:g}: your dropout zeroes some weights and "
            f"scales the rest by 1/(1-p) = {1 / (1 - rate):g}, and your context uses the "
            "dropped weights."
        )
    else:
        reason = (
            result.dropout.note
            if result.dropout is not None and result.dropout.note
            else result.problem or "it did not match"
        )
        text = f"with --dropout {rate:g} your dropout could not be checked: {reason}."
    return textwrap.fill(text, NOTE_WIDTH)


def _dropout_on_note(result: CheckResult) -> str:
    return dropout_line(result, CHECK_RATE)


def _second_look(
    key: str, changes: Callable[..., dict[str, Any] | None], why: Callable[..., str]
) -> Recheck:
    def line(trace: Trace, made: dict[str, Any]) -> str:
        return f"(your output matches with these options, but {why(trace, made)})"

    return Recheck(key, changes, overturns=lambda result: not result.matches, why=line)


RECHECKS: tuple[Recheck, ...] = (
    # The defaults hide a missing √d_k (heads 1 wide): run again where they do not.
    Recheck(
        "second",
        _wider,
        overturns=lambda result: not result.matches,
        why=lambda trace, changes: (
            "(with these options every head is 1 wide, so √d_k = 1 and a missing scale would "
            f"not show; checked again with --d-out {changes['d_out']})"
        ),
        replaces=True,
    ),
    # Dropout off hides a dropout that is ignored, misplaced or not rescaled. A dropout check
    # that could establish nothing says so, and does not overturn the verdict.
    Recheck(
        "with_dropout",
        _dropout_on,
        overturns=lambda result: not result.matches and bool(result.diagnoses),
        why=lambda trace, changes: (
            "(with --dropout 0 your output matches; dropout off would hide a mistake in your "
            f"dropout, so it was checked again with --dropout {changes['dropout']:g})"
        ),
        passed_note=_dropout_on_note,
    ),
    # Dropout on leaves the stages after the context uncompared (the masks differ):
    # compare them value by value with dropout off.
    Recheck(
        "without_dropout",
        _dropout_off,
        overturns=lambda result: not result.matches,
        why=lambda trace, changes: (
            f"(with --dropout {trace.context.dropout:g} your dropout has the right structure, "
            "but the stages after the context cannot be compared while the masks differ; "
            "checked again with --dropout 0)"
        ),
        passed_note=lambda result: (
            "checked again with --dropout 0: the stages after the context match too."
        ),
    ),
    # What the defaults of the modern variants hide (tracer.learner.second_looks): a running
    # maximum that never grows, a window as long as the text, one key/value head, eval mode.
    *(_second_look(key, changes, why) for key, changes, why in LOOKS),
)


TRACE_CHANGES = ("seed", "init", "d_out", "inputs")
"""Trace options a variant's declared recheck may change besides its own options."""


def declared_rechecks(trace: Trace) -> tuple[Recheck, ...]:
    """The variant's own rechecks (``Variant(rechecks=({"cap": 0.5},))``), after the built-ins."""
    declared = getattr(trace.variant, "rechecks", ()) or ()
    return tuple(
        Recheck(
            f"declared_{number}",
            functools.partial(_declared_changes, dict(values)),
            overturns=lambda result: not result.matches,
            why=functools.partial(_declared_why, dict(values)),
        )
        for number, values in enumerate(declared, 1)
        if isinstance(values, Mapping)
    )


def _current(trace: Trace, name: str) -> Any:
    context = trace.context
    if name == "seed":
        return context.seed
    if name == "init":
        return context.init
    if name == "d_out":
        return None if context.weights is None else int(context.weights.query.shape[-1])
    if name == "inputs":
        return None  # an input set is not compared by name: always checked again
    return context.extra.get(name)


def _declared_changes(
    values: dict[str, Any],
    trace: Trace,
    first: CheckResult,
    passed: CheckResult,
    earlier: dict[str, Any],
) -> dict[str, Any] | None:
    if not passed.matches or all(_current(trace, k) == v for k, v in values.items()):
        return None  # nothing to overturn, or this run already is that configuration
    own = {k: v for k, v in values.items() if k not in TRACE_CHANGES}
    changes = {**earlier, **{k: v for k, v in values.items() if k in TRACE_CHANGES}}
    if own:
        changes["options"] = {**trace.context.extra, **earlier.get("options", {}), **own}
    return changes


def _declared_why(values: dict[str, Any], trace: Trace, changes: dict[str, Any]) -> str:
    shown = " ".join(
        f"--{k.replace('_', '-')} {v}" if k in TRACE_CHANGES else f"-o {k}={v}"
        for k, v in values.items()
    )
    return (
        f"(your output matches with these options, but '{trace.variant.name}' asks for a check "
        f"with {shown} too, where a mistake these options hide would show)"
    )


@dataclass
class Rechecked:
    recheck: Recheck
    changes: dict[str, Any]
    result: CheckResult

    @property
    def overturns(self) -> bool:
        return self.recheck.overturns(self.result)


@dataclass
class Judgement:
    """The first check and every recheck that applied; what the learner is told."""

    first: CheckResult
    rechecks: list[Rechecked]

    @property
    def final(self) -> CheckResult:
        """The result that stands: the last replacing recheck's, else the first."""
        replacing = [r.result for r in self.rechecks if r.recheck.replaces]
        return replacing[-1] if replacing else self.first

    @property
    def failed(self) -> Rechecked | None:
        """The first recheck that turned the pass into a failure."""
        return next((r for r in self.rechecks if r.overturns), None)

    @property
    def matches(self) -> bool:
        failed = self.failed
        if failed is not None:
            return False
        return self.final.matches

    def notes(self) -> list[str]:
        """Lines for a pass: what each confirming recheck added."""
        return [
            r.recheck.passed_note(r.result)
            for r in self.rechecks
            if r.recheck.passed_note is not None
        ]


def judge(
    path: Path,
    trace: Trace,
    rerun: Rerun,
    *,
    function: str | None = None,
    limits: Limits | None = None,
    rechecks: tuple[Recheck, ...] = RECHECKS,
) -> Judgement:
    """Check the file, then again under each configuration of ``rechecks`` that applies.

    ``rerun(changes)`` gives the reference with those trace options changed.
    Every check runs in the same warm sandbox server.
    """
    first = check(path, trace, function=function, limits=limits)
    judgement = Judgement(first, [])
    standing = first
    earlier: dict[str, Any] = {}
    for recheck in (*rechecks, *declared_rechecks(trace)):
        changes = recheck.changes(trace, first, standing, earlier)
        if changes is None:
            continue
        options = {k: v for k, v in changes.items() if k != EVAL_DROPOUT}
        try:
            result = check(
                path,
                rerun(options) if options else trace,
                function=function,
                limits=limits,
                eval_dropout=changes.get(EVAL_DROPOUT),
            )
        except UsageError:  # code that cannot take these sizes (one width): nothing to learn
            continue
        judgement.rechecks.append(Rechecked(recheck, changes, result))
        if recheck.replaces:
            standing = result
            earlier = {**earlier, **changes}
    return judgement
