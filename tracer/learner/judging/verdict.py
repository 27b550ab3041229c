"""One check of a learner's file against a finished reference trace, and its verdict.

1. The variant runs as usual, in this process; its stages are the reference.
2. The learner's code runs in a sandbox process on copies of the same inputs and
   weights (it can never reach the reference), under a recorder that notes every torch
   operation with the learner's line; what comes back is decoded and checked once
   (:mod:`tracer.learner.sandbox.payload`) before it is used.
3. Each reference stage is looked for among the learner's tensors
   (:mod:`tracer.learner.judging.stage_matching`).
4. The detectors in :mod:`tracer.learner.judging.diagnosis` name the likely mistake."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from tracer.learner.judging.compare import (
    close,
    judged_at,
    precision_of,
)
from tracer.learner.judging.diagnosis import Diagnosis, Evidence, diagnose
from tracer.learner.judging.divergence import explain_divergence, matched_before, through_helper
from tracer.learner.judging.dropout_check import DropoutCheck, check_dropout
from tracer.learner.judging.mutations import (
    closer_mistake,
    hidden_by_output,
    merge,
    mistakes_of,
    reproduce,
)
from tracer.learner.judging.results import (
    AFTER_DROPOUT,
    DIFFERS,
    MATCH,
    NOT_COMPARED,
    OTHER_ROUTE,
    OWN_MASK,
    CheckResult,
    StageResult,
)
from tracer.learner.judging.returned import (
    changed_arguments,
    checked_output,
    pick_field,
    returned_fields_problem,
    returned_weights_problem,
)
from tracer.learner.judging.sandbox_request import HIDDEN, refuse_overflow, sandbox_request
from tracer.learner.judging.stage_matching import compare_stages
from tracer.learner.sandbox.parent_side import Limits, Outcome, run_sandboxed
from tracer.learner.sandbox.payload import ReturnedOutput, usable
from tracer.learner.sandbox.recorder import Record
from tracer.learner.sandbox.source_loader import read_source
from tracer.tracing import Trace

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost


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

    The learner's code runs in a sandbox process (:mod:`tracer.learner.sandbox.child`);
    everything it sends back is checked here before it is compared.
    """
    filename = str(path)
    read_source(path)
    refuse_overflow(trace)
    request, tensors = sandbox_request(trace, function)
    if eval_dropout is not None:
        request["eval_dropout"] = eval_dropout
    outcome = run_sandboxed(filename, request, tensors, limits or Limits.from_environment())
    records = outcome.result.records
    precision = precision_of([r.value for r in records] + [usable(outcome.result.output.tensor)])
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
    returned = outcome.result
    by_index = {r.index: r for r in records}
    changed = changed_arguments(
        {n: t for n, t in tensors.items() if n != HIDDEN}, returned.arguments_after
    )
    expected = trace.output
    assert expected is not None
    stages, diverging = compare_stages(trace, records)
    output, picked = pick_field(returned.output, expected)
    tensor_output, problem = checked_output(output, expected)
    if problem is None and output.weights is not None:
        problem = returned_weights_problem(output.weights, trace)
    if problem is None and output.fields is not None:
        problem = returned_fields_problem(output.fields, trace)
    note = returned.note
    if picked is not None:
        note = picked if note is None else f"{note}; {picked}"
    matches = problem is None and tensor_output is not None and close(tensor_output, expected)
    discarded = [by_index[i] for i in returned.discarded if i in by_index]
    evidence = Evidence(
        records=records,
        mutations=returned.mutations,
        discarded=discarded,
        changed_arguments=changed,
        output=tensor_output,
        expected_output=expected,
        stages=trace.stages,
        dropout=float(trace.context.dropout),
        dropout_lines=returned.dropout_lines,
        path=filename,
        arguments={n: t for n, t in tensors.items() if n != HIDDEN},
    )
    matched = matched_before(stages, diverging)
    diagnoses = merge(
        diagnose(evidence),
        reproduce(evidence, mistakes_of(trace.variant), trace.context, matched),
    )
    takes_dropout = returned.takes_dropout
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
    output_id = output.id
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
        called=returned.called,
        note=note,
        learner_output=outcome.output,
        dropout=dropout,
        takes_dropout=takes_dropout,
        precision=precision,
    )


def _judge_dropout(
    dropout: DropoutCheck,
    stages: list[StageResult],
    diverging: StageResult | None,
    output: ReturnedOutput,
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
    returned = output.weights
    if returned is not None and dropout.dropped is not None:
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
