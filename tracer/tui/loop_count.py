"""Where a loop is: what one iteration is called, and how many there are once that is certain.

The tracer numbers a loop's sub-steps from the stage before it, and a stage
ends the loop, so the count is exact as soon as the stepper has seen the stage
after it (or the trace ended cleanly). Before that nothing is estimated.
"""

from __future__ import annotations

from tracer.tracing.stepper import Stepper
from tracer.variant import SubStep


def loop_noun(step: SubStep) -> str:
    """What one iteration is called: a (query, key) pair, else a sub-step."""
    return "pair" if len(step.position) == 2 else "sub-step"


def loop_total(stepper: Stepper, index: int, step: SubStep) -> int | None:
    """How many sub-steps the loop holding step ``index`` (which is ``step``) has, if certain."""
    first = index - step.index
    after = next((number for number in stepper.stage_numbers if number > index), None)
    if after is not None:
        return after - first
    if stepper.total is not None and stepper.error is None:
        return stepper.total - first
    return None  # not reached yet, or the variant failed inside the loop


def loop_place(step: SubStep, total: int | None) -> str:
    """``pair 8 of 36``, or ``pair 8`` while the total is not known."""
    place = f"{loop_noun(step)} {step.index + 1:,}"
    return place if total is None else f"{place} of {total:,}"
