"""Where a loop is, in words: what one iteration is called and its place in the loop. No Textual.

The explorer's view says "pair 8 of 36" (:func:`loop_place`); a lesson's loop says more
(:func:`loop_words`): the pair, its position counted from 0, and the tokens it pairs, numbered
as here (``x[1]``) and as in the course's notebooks (x_2). Front ends style these words; they
never word a place themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracer.render.labels import position_tokens
from tracer.variant import SubStep, source_tokens


def loop_noun(step: SubStep) -> str:
    """What one iteration is called: a (query, key) pair, else a sub-step."""
    return "pair" if len(step.position) == 2 else "sub-step"


def loop_place(step: SubStep, total: int | None) -> str:
    """``pair 8 of 36``, or ``pair 8`` while the total is not known."""
    place = f"{loop_noun(step)} {step.index + 1:,}"
    return place if total is None else f"{place} of {total:,}"


@dataclass(frozen=True)
class LoopWords:
    """A loop's position in three parts, for a front end to style."""

    head: str
    """``pair 8 of 36`` ("?" for what is unknown or would state an unanswered quiz's answer)."""
    where: str
    """`` · position (1, 3), counted from 0``."""
    names: str = ""
    """The tokens of a pair: ``journey = x[1] here, x_2 in the course; ...`` (may be empty)."""


def loop_words(
    step: SubStep,
    number: int | None,
    count: int | None,
    tokens: Sequence[str],
    axes: Sequence[str] | None = None,
) -> LoopWords:
    """Where a loop is: ``pair 8 of 36``, and which tokens, numbered as here and as in the course.

    ``number``: the sub-step's, from 1; it and ``count`` read "?" where None (unknown, or
    an unanswered quiz's answer). The tracer numbers tokens from 0 (``x[1]``); the
    course's notebooks write x_1, x_2, ... from 1, so "journey" is x_2 there. Both are said
    where it matters. ``axes``: the loop's matrix axes; an index is named as a token only
    along a token axis (a source's token on a cross-attention key axis), never a pair or a
    feature (:func:`~tracer.render.labels.position_tokens`).
    """
    said = "?" if number is None else f"{number:,}"
    head = f"{loop_noun(step)} {said} of {'?' if count is None else f'{count:,}'}"
    position = ", ".join(str(p) for p in step.position)
    names = position_tokens(step.position, axes, tokens, step)
    source = source_tokens(tokens)
    named: list[str] = []
    kinds = axes if axes is not None and len(axes) == len(names) else ("",) * len(names)
    for p, name, axis in zip(step.position, names, kinds, strict=True):
        if not name:
            continue
        on_source = source is not None and axis.partition(":")[0] in ("source", "key")
        token = f"{name} = source[{p}]" if on_source else f"{name} = x[{p}] here"
        token += "" if on_source else f", x_{p + 1} in the course"
        if token not in named:
            named.append(token)
    pair = len(step.position) == 2 and named
    return LoopWords(
        head, f" · position ({position}), counted from 0", "; ".join(named) if pair else ""
    )
