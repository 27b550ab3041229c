"""What one check found: each reference stage's status, the verdict, and what the learner's
precision says about the gap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from tracer.learner.judging.compare import (
    ATOL,
    max_difference,
    tolerance_for,
)
from tracer.learner.judging.diagnosis import Diagnosis
from tracer.learner.judging.dropout_check import DropoutCheck
from tracer.learner.sandbox.recorder import Record
from tracer.tracing import Trace
from tracer.variant import Stage

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
