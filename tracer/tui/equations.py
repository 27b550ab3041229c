"""A sub-step's declared equation, written out with its numbers (no Textual: the CLI uses it too).

Only a declared :class:`~tracer.variant.Dot` or :class:`~tracer.variant.Accumulate`
is written out, and only when the numbers on screen satisfy it: two vectors
side by side are not evidence that they were multiplied.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tracer.render.text import format_number
from tracer.variant import Accumulate, Dot, SubStep

VECTOR_LIMIT = 8
"""Terms written out; longer products are cut short with a count."""


def _values(tensor: Any) -> list[float]:
    values: list[float] = tensor.detach().flatten().tolist()
    return values


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-5 + 1e-4 * abs(b)


def equation_text(step: SubStep) -> Text | None:
    """The sub-step's declared equation written out with its numbers, if they satisfy it.

    None when there is no equation. When the declared tensors are missing, have
    the wrong shapes or do not add up, a short note says so and no arithmetic
    is written: a number on screen must be one that was computed.
    """
    equation = step.equation
    if equation is None:
        return None
    tensors = step.tensors
    text = Text()
    if isinstance(equation, Dot):
        a, b, result = (tensors.get(n) for n in (equation.a, equation.b, equation.result))
        if a is None or b is None or result is None:
            return Text("(the declared dot product names tensors this step lacks)", style="dim")
        if not (_ndim(a) == 1 and _ndim(b) == 1 and _ndim(result) == 0) or a.numel() != b.numel():
            return Text("(the declared dot product does not fit these tensors)", style="dim")
        xs, ys, r = _values(a), _values(b), float(result)
        if not _close(sum(x * y for x, y in zip(xs, ys, strict=True)), r):
            return Text("(the declared dot product does not match these numbers)", style="dim")
        text.append(f"{equation.result} = {equation.a} · {equation.b}\n", style="bold")
        terms = [f"{format_number(x)}×{format_number(y)}" for x, y in zip(xs, ys, strict=True)]
        if len(terms) > VECTOR_LIMIT:
            terms = [*terms[: VECTOR_LIMIT // 2], f"… ({len(terms)} products)"]
        text.append(" + ".join(terms) + f" = {format_number(r)}")
        return text
    if isinstance(equation, Accumulate):
        names = (equation.before, equation.weight, equation.value, equation.after)
        before, weight, value, after = (tensors.get(n) for n in names)
        shapes_fit = (
            weight is not None
            and _ndim(weight) == 0
            and before is not None
            and value is not None
            and after is not None
            and tuple(before.shape) == tuple(value.shape) == tuple(after.shape)
        )
        if not shapes_fit or weight is None or before is None or value is None or after is None:
            return Text("(the declared accumulation does not fit these tensors)", style="dim")
        w = float(weight)
        olds, vs, news = _values(before), _values(value), _values(after)
        if not all(_close(o + w * v, n) for o, v, n in zip(olds, vs, news, strict=True)):
            return Text("(the declared accumulation does not match these numbers)", style="dim")
        text.append(
            f"{equation.after} = {equation.before} + {equation.weight} × {equation.value}",
            style="bold",
        )
        for k, (o, v, n) in enumerate(zip(olds, vs, news, strict=True)):
            if k == VECTOR_LIMIT:
                text.append(f"\n… ({len(news)} values)")
                break
            text.append(
                f"\n[{k}] {format_number(o)} + {format_number(w)}×{format_number(v)}"
                f" = {format_number(n)}"
            )
        return text
    return None


def _ndim(tensor: Any) -> int | None:
    return getattr(tensor, "ndim", None)
