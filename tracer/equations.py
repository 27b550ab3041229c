"""The arithmetic a step declares, checked where it is yielded and shown as its formula.

A sub-step declares what it computed from its own tensors (:class:`Dot`,
:class:`Accumulate`); a stage declares how its tensor follows from others
(:class:`MatMul`, :class:`Elementwise`, :class:`Sum`, :class:`Difference`,
:class:`AddBias`). The tracer checks each against the numbers before a reader sees it
(:mod:`tracer.tracing.checks`), so a written-out equation is never a claim the numbers do
not bear out. Import them from ``tracer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dot:
    """The sub-step computed ``result = sum(a * b)`` from its 1-d tensors ``a`` and ``b``.

    Declaring it lets a viewer write out the products term by term; the tracer
    checks that the numbers agree before the sub-step is shown.
    """

    a: str
    b: str
    result: str


@dataclass(frozen=True)
class Accumulate:
    """The sub-step computed ``after = before + weight * value`` (a running weighted sum).

    ``weight`` is a single number, or a tensor: when ``weight.shape + value.shape`` is
    the shape of ``before``, the update is their outer product (``S += φ(k) vᵀ`` of
    linear attention: ``Accumulate("S_before", "phi_k", "v", "S")``); otherwise
    ``weight * value`` broadcast to the shape of ``before`` (element by element).
    """

    before: str
    weight: str
    value: str
    after: str


Scale = float | str
"""A number, or the name of a single-number tensor (``"lam"``) found as equations find tensors."""


@dataclass(frozen=True)
class MatMul:
    """The stage computed ``result = a @ b`` (``b`` transposed with ``transpose_b=True``),
    times ``scale`` when given: ``MatMul("queries", "keys", "scores", transpose_b=True,
    scale=0.7071)``, ``MatMul("weights", "values", "context")``. Products follow
    ``torch.matmul`` (a vector times a matrix is a read-out)."""

    a: str
    b: str
    result: str
    transpose_b: bool = False
    scale: Scale | None = None


ELEMENTWISE = (
    "tanh",
    "sigmoid",
    "exp",
    "log",
    "relu",
    "elu",
    "gelu",
    "silu",
    "softplus",
    "abs",
    "sqrt",
    "square",
    "cos",
    "sin",
    "softmax",
)
"""The functions :class:`Elementwise` knows (``softmax`` along the last axis)."""


@dataclass(frozen=True)
class Elementwise:
    """The stage computed ``result = after × f(before × x)`` for one of :data:`ELEMENTWISE`:
    ``Elementwise("sigmoid", "scores", "weights")``; soft-capping at 30 is
    ``Elementwise("tanh", "scores", "capped", before=1/30, after=30)``."""

    function: str
    x: str
    result: str
    before: Scale = 1.0
    after: Scale = 1.0


@dataclass(frozen=True)
class Sum:
    """The stage computed ``result = a + weight × b`` (element by element, broadcast); ``b``
    may be a number (linear attention's ``φ = elu(x) + 1`` is ``Sum("elu_x", 1.0, "phi")``)."""

    a: str
    b: Scale
    result: str
    weight: Scale = 1.0


@dataclass(frozen=True)
class Difference:
    """The stage computed ``result = a − weight × b``: differential attention's two softmaxes
    are ``Difference("weights_1", "weights_2", "weights", weight="lam")``."""

    a: str
    b: Scale
    result: str
    weight: Scale = 1.0


@dataclass(frozen=True)
class AddBias:
    """The stage computed ``result = x + bias``, the bias broadcast (a learnt ``Param`` or a
    tensor of this or an earlier stage): ``AddBias("scores", "alibi", "biased")``."""

    x: str
    bias: str
    result: str


Equation = Dot | Accumulate
StageEquation = MatMul | Elementwise | Sum | Difference | AddBias
"""What :func:`stage`'s ``equation=`` may declare; the tracer evaluates it when the stage is
yielded and refuses the stage, at the yield, when it does not hold."""


STAGE_EQUATIONS = (MatMul, Elementwise, Sum, Difference, AddBias)


def _scale_text(scale: Scale) -> str:
    return f"{scale:g}" if isinstance(scale, (int, float)) else str(scale)


def equation_formula(equation: object) -> str | None:
    """A stage equation as a line of mathematics: ``context = weights @ values``."""
    if isinstance(equation, MatMul):
        text = f"{equation.result} = {equation.a} @ {equation.b}" + (
            "ᵀ" if equation.transpose_b else ""
        )
        return text + (f" × {_scale_text(equation.scale)}" if equation.scale is not None else "")
    if isinstance(equation, Elementwise):
        inner = (
            equation.x if equation.before == 1 else f"{_scale_text(equation.before)} × {equation.x}"
        )
        outer = "" if equation.after == 1 else f"{_scale_text(equation.after)} × "
        return f"{equation.result} = {outer}{equation.function}({inner})"
    if isinstance(equation, (Sum, Difference)):
        sign = "+" if isinstance(equation, Sum) else "−"
        weight = "" if equation.weight == 1 else f"{_scale_text(equation.weight)} × "
        return f"{equation.result} = {equation.a} {sign} {weight}{_scale_text(equation.b)}"
    if isinstance(equation, AddBias):
        return f"{equation.result} = {equation.x} + {equation.bias}"
    if isinstance(equation, Dot):
        return f"{equation.result} = {equation.a} · {equation.b}"
    if isinstance(equation, Accumulate):
        return f"{equation.after} = {equation.before} + {equation.weight} × {equation.value}"
    return None


def equation_json(equation: object) -> dict[str, Any]:
    """An equation (a stage's or a sub-step's) as JSON: its kind and its fields."""
    from dataclasses import asdict, is_dataclass

    fields = asdict(equation) if is_dataclass(equation) and not isinstance(equation, type) else {}
    return {"kind": type(equation).__name__, **fields, "formula": equation_formula(equation)}
