"""``attn check``'s verdict: check a learner's file, then again wherever a pass could hide a
mistake (the re-check policy), so ``attn check`` and ``attn exercises watch`` always agree.

One check is :func:`tracer.learner.judging.verdict.check`; :func:`judge` runs it, then
each :class:`Recheck` that applies, and returns the :class:`Judgement` the report shows.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracer.errors import UsageError
from tracer.learner.judging.dropout_check import CHECK_RATE
from tracer.learner.judging.results import NOT_COMPARED, CheckResult
from tracer.learner.judging.second_looks import EVAL_DROPOUT, LOOKS
from tracer.learner.judging.verdict import check, hidden_scaling_d_out, hides_dropout
from tracer.learner.sandbox.parent_side import Limits
from tracer.tracing import Trace

NOTE_WIDTH = 88
"""The width the notes of a second run are wrapped to (the report's width)."""


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
    # What the defaults of the modern variants hide (tracer.learner.judging.second_looks): a running
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
