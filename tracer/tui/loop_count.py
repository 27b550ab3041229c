"""Where a loop is, in words: what one iteration is called, and its place in the loop.

How many iterations a loop has is the stepper's to say (``Stepper.loop_total``).
"""

from __future__ import annotations

from tracer.variant import SubStep


def loop_noun(step: SubStep) -> str:
    """What one iteration is called: a (query, key) pair, else a sub-step."""
    return "pair" if len(step.position) == 2 else "sub-step"


def loop_place(step: SubStep, total: int | None) -> str:
    """``pair 8 of 36``, or ``pair 8`` while the total is not known."""
    place = f"{loop_noun(step)} {step.index + 1:,}"
    return place if total is None else f"{place} of {total:,}"
