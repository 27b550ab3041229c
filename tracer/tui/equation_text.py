"""A sub-step's declared equation, written out with its numbers (no Textual: the CLI uses it too).

Only a declared :class:`~tracer.equations.Dot` or :class:`~tracer.equations.Accumulate`
is written out, and only when the numbers on screen satisfy it: two vectors
side by side are not evidence that they were multiplied.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tracer.render.text import format_number
from tracer.session.explore import accumulated
from tracer.variant import Accumulate, Dot, SubStep

VECTOR_LIMIT = 8
"""Terms written out; longer products are cut short with a count."""


def _values(tensor: Any) -> list[float]:
    values: list[float] = tensor.detach().flatten().tolist()
    return values


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-5 + 1e-4 * abs(b)


WITHHELD = "(its numbers: once the quiz is answered)"
"""Said under an equation whose numbers a lesson keeps off screen (an unanswered quiz's)."""


def equation_text(step: SubStep, *, numbers: bool = True) -> Text | None:
    """The sub-step's declared equations written out with their numbers, if they satisfy them.

    None when there is no equation. When the declared tensors are missing, have
    the wrong shapes or do not add up, a short note says so and no arithmetic
    is written: a number on screen must be one that was computed. Several
    equations are written one after another. Without ``numbers`` (one of them would
    give away an unanswered quiz's answer, the rest it by an addition) each equation is
    written in its names alone, with :data:`WITHHELD` under it.
    """
    equations = step.equations or ((step.equation,) if step.equation is not None else ())
    if not numbers:
        texts = [_names(equation, step.tensors) for equation in equations]
        shown = [text for text in texts if text is not None]
        return Text("\n\n").join(shown) if shown else None
    texts = [_one(equation, step.tensors) for equation in equations]
    shown = [text for text in texts if text is not None]
    if not shown:
        return None
    return Text("\n\n").join(shown)


def _one(equation: object, tensors: dict[str, Any]) -> Text | None:
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
        return _accumulate(equation, tensors)
    return None


def _names(equation: object, tensors: dict[str, Any]) -> Text | None:
    """An equation in its names alone (its numbers withheld), with :data:`WITHHELD` under it."""
    if isinstance(equation, Dot):
        written = f"{equation.result} = {equation.a} · {equation.b}"
    elif isinstance(equation, Accumulate):
        weight, value, before = (
            tensors.get(n) for n in (equation.weight, equation.value, equation.before)
        )
        outer = False
        if weight is not None and value is not None and before is not None:
            scalar = weight.numel() == 1 and value.shape == before.shape
            outer = not scalar and tuple(weight.shape) + tuple(value.shape) == tuple(before.shape)
        sign = "⊗" if outer else "×"
        written = (
            f"{equation.after} = {equation.before} + {equation.weight} {sign} {equation.value}"
        )
    else:
        return None
    text = Text(written + "\n", style="bold")
    text.append(WITHHELD, style="dim")
    return text


def _accumulate(equation: Accumulate, tensors: dict[str, Any]) -> Text:
    """``after = before + weight × value``, cell by cell, for a number, outer or element-wise weight."""
    names = (equation.before, equation.weight, equation.value, equation.after)
    before, weight, value, after = (tensors.get(n) for n in names)
    if before is None or weight is None or value is None or after is None:
        return Text("(the declared accumulation does not fit these tensors)", style="dim")
    b, w, v, a = (t.detach().double() for t in (before, weight, value, after))
    expected = accumulated(b, w, v) if a.shape == b.shape else None
    if expected is None:
        return Text("(the declared accumulation does not fit these tensors)", style="dim")
    olds, news = _values(b), _values(a)
    if not all(_close(e, n) for e, n in zip(_values(expected), news, strict=True)):
        return Text("(the declared accumulation does not match these numbers)", style="dim")
    scalar = w.numel() == 1 and v.shape == b.shape
    outer = not scalar and tuple(w.shape) + tuple(v.shape) == tuple(b.shape)
    sign = "⊗" if outer else "×"
    text = Text(
        f"{equation.after} = {equation.before} + {equation.weight} {sign} {equation.value}",
        style="bold",
    )
    # Each cell's own weight and value, as the update combined them.
    if scalar:
        ws, vs = [float(w.reshape(()))] * len(olds), _values(v)
    elif outer:
        shaped = w.reshape(*w.shape, *([1] * v.dim()))
        ws, vs = _values(shaped.expand(b.shape)), _values(v.expand(b.shape))
    else:
        ws, vs = _values(w.expand(b.shape)), _values(v.expand(b.shape))
    shape = tuple(b.shape)
    for k, (o, wk, vk, n) in enumerate(zip(olds, ws, vs, news, strict=True)):
        if k == VECTOR_LIMIT:
            text.append(f"\n… ({len(news)} values)")
            break
        text.append(
            f"\n[{_index(k, shape)}] {format_number(o)} + {format_number(wk)}×{format_number(vk)}"
            f" = {format_number(n)}"
        )
    return text


def _index(flat: int, shape: tuple[int, ...]) -> str:
    """``3`` of a vector, ``1,2`` of a matrix: the cell's position as the tensor has it."""
    position = []
    for size in reversed(shape or (1,)):
        position.append(flat % size)
        flat //= size
    return ",".join(str(p) for p in reversed(position))


def _ndim(tensor: Any) -> int | None:
    return getattr(tensor, "ndim", None)
