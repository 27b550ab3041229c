"""Checking each step a variant yields, where it yields it.

A renderer trusts what it is given: tensors it can draw, axes that match
their shapes, equations that hold. So every promise a step makes is checked
here, and a broken one is a plugin error at the plugin's ``file:line``,
naming the variant, the stage and the tensor.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import Protocol

import torch

from tracer.errors import Location, VariantRunError
from tracer.suggest import did_you_mean
from tracer.variant import (
    COMMON_AXES,
    ELEMENTWISE,
    STAGE_EQUATIONS,
    TOKEN_AXES,
    Accumulate,
    AddBias,
    Difference,
    Dot,
    Elementwise,
    MatMul,
    RunContext,
    Stage,
    SubStep,
    Sum,
    Variant,
    equation_formula,
    parse_axis,
)


class TraceView(Protocol):
    """What the checks read of a trace (:class:`tracer.tracing.Trace` and its worker twin)."""

    @property
    def variant(self) -> Variant: ...
    @property
    def context(self) -> RunContext: ...
    @property
    def stages(self) -> Sequence[Stage]: ...
    @property
    def tokens(self) -> Sequence[str]: ...


AXIS_NAME = re.compile(r"^[a-z][a-z0-9_]*(:[0-9]+)?$")
MAX_ELEMENTS = 2**28
"""The most values one tensor of a step may hold (a 16,384-token score matrix)."""
NUMERIC = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def check_step(trace: TraceView, step: Stage | SubStep, where: Location) -> None:
    """Raise a :class:`VariantRunError` at ``where`` if ``step`` breaks a rule."""
    variant = trace.variant
    if isinstance(step, Stage):
        subject = f"stage '{step.name}'"
        if step.name not in variant.stages:
            raise _error(
                trace,
                f"yielded stage '{step.name}', which it does not declare in stages="
                f"{list(variant.stages)}",
                where,
            )
        if any(done.name == step.name for done in trace.stages):
            raise _error(trace, f"yielded stage '{step.name}' twice", where)
        strays = [name for name in getattr(step, "formulas", {}) if name not in step.tensors]
        if strays:
            raise _error(
                trace,
                f"{subject}: formulas= names '{strays[0]}', which is not one of its tensors "
                f"({', '.join(step.tensors) or 'none'})",
                where,
            )
    else:
        subject = f"a sub-step of '{step.stage}'"
        if step.stage not in variant.loops:
            raise _error(
                trace,
                f"yielded a sub-step of '{step.stage}', which it does not declare in loops="
                f"{list(variant.loops)}",
                where,
            )
        if any(done.name == step.stage for done in trace.stages):
            raise _error(
                trace, f"yielded a sub-step of '{step.stage}' after that stage was done", where
            )
    for name in list(step.tensors):
        step.tensors[name] = _tensor(trace, subject, name, step.tensors[name], where)
    _check_axes(trace, subject, step, where)
    _guess_token_tables(trace, step)
    if isinstance(step, SubStep):
        for equation in step.equations or ((step.equation,) if step.equation else ()):
            _check_equation(trace, subject, step, equation, where)
        _note_position(trace, step, where)
    else:
        for equation in getattr(step, "equations", ()) or ():
            _check_stage_equation(trace, subject, step, equation, where)
        if step.name in variant.loops:
            _check_positions(trace, step)


def _note_position(trace: TraceView, step: SubStep, where: Location) -> None:
    """A sub-step's position: whole numbers from 0; the largest along each dimension is
    kept (with where it was yielded) until the stage arrives and its shape is known."""
    position = step.position
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in position):
        raise _error(
            trace,
            f"a sub-step of '{step.stage}': position {position!r} must be whole numbers from 0, "
            "the cell of the stage's tensor this iteration writes",
            where,
        )
    seen: dict[str, list[tuple[int, tuple[int, ...], Location]]]
    seen = trace.__dict__.setdefault("_positions", {})
    largest = seen.setdefault(step.stage, [])
    for dim, index in enumerate(position):
        if dim == len(largest):
            largest.append((index, position, where))
        elif index > largest[dim][0]:
            largest[dim] = (index, position, where)


def _check_positions(trace: TraceView, stage: Stage) -> None:
    """Every sub-step of the loop that built ``stage`` wrote inside its main tensor.

    A position indexes the leading dimensions of the stage's first tensor (or the tokens);
    when one query is focused and that tensor is the query's slice, the query dimension
    counts too. The error is at the yield of the sub-step with the largest coordinate."""
    largest = trace.__dict__.get("_positions", {}).pop(stage.name, None)
    if not largest or not stage.tensors:
        return
    name, tensor = next(iter(stage.tensors.items()))
    shape = list(tensor.shape)
    axes = [parse_axis(a)[0] for a in stage.axes.get(name, ())]
    query = trace.context.query
    if query is not None and "query" in axes and len(axes) == len(shape) + 1:
        shape.insert(axes.index("query"), len(trace.context.tokens))
    # A loop over tokens may write a grid the tensor does not have (naive-loop's context
    # adds key j's value into row i: position (i, j) of a (query, feature) tensor), so a
    # coordinate may also run up to the number of tokens; beyond both it is a slip.
    source = trace.context.source
    tokens = max(len(trace.context.tokens), len(source.tokens) if source is not None else 0)
    for dim, (index, position, where) in enumerate(largest):
        bound = max(shape[dim] if dim < len(shape) else 0, tokens)
        if index >= bound:
            size = f"of shape {tuple(shape)}" if shape else "(a single number)"
            raise _error(
                trace,
                f"a sub-step of '{stage.name}': position {position} is outside the stage's "
                f"tensor '{name}' {size} and the {tokens} tokens (coordinate {dim + 1} is "
                f"{index}; it runs 0 to {bound - 1})",
                where,
            )


def _tensor(
    trace: TraceView, subject: str, name: str, value: object, where: Location
) -> torch.Tensor:
    """The value as a tensor a renderer can show: a plain number becomes a 0-d tensor."""
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, (int, float)):
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            digits = len(str(abs(value)))
            raise _error(
                trace,
                f"{subject}: tensor '{name}' is a whole number of {digits:,} digits, beyond "
                "int64; yield it as a float (or a tensor)",
                where,
            )
        return torch.tensor(value, dtype=torch.float32 if isinstance(value, float) else torch.int64)
    problem = None
    if not isinstance(value, torch.Tensor):
        problem = f"is {_kind(value)}; yield a torch tensor (or a plain number)"
    elif value.layout != torch.strided:
        problem = f"is a {value.layout} tensor; yield a dense one (.to_dense())"
    elif value.is_meta:
        problem = "is a meta tensor, which has no values to show"
    elif value.is_complex():
        problem = f"is complex ({value.dtype}); yield its real part, imaginary part or abs()"
    elif not (value.is_floating_point() or value.dtype in NUMERIC):
        problem = f"has dtype {value.dtype}, which is not a number type"
    elif max(value.shape, default=0) > MAX_ELEMENTS:  # (0, 2**40) holds no values but 2**40 labels
        problem = (
            f"has an axis of {max(value.shape):,} positions {tuple(value.shape)}; a step can "
            f"show at most {MAX_ELEMENTS:,}"
        )
    elif value.numel() > MAX_ELEMENTS:
        problem = (
            f"has {value.numel():,} values {tuple(value.shape)}; a step can show at most "
            f"{MAX_ELEMENTS:,}"
        )
    if problem is not None:
        raise _error(trace, f"{subject}: tensor '{name}' {problem}", where)
    assert isinstance(value, torch.Tensor)
    return value


def _kind(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, complex):
        return "a complex number"
    return f"a {type(value).__name__}"


def _check_axes(trace: TraceView, subject: str, step: Stage | SubStep, where: Location) -> None:
    focused = trace.context.query is not None
    for name, axes in step.axes.items():
        if name not in step.tensors:
            raise _error(
                trace,
                f"{subject}: axes are given for '{name}', which is not one of its tensors "
                f"({', '.join(step.tensors) or 'none'})",
                where,
            )
        for axis in axes:
            if not AXIS_NAME.match(axis):
                raise _error(
                    trace,
                    f"{subject}: axis name '{axis}' of tensor '{name}' must be lower-case "
                    "letters, digits and underscores, optionally ':N' for a token offset",
                    where,
                )
            slip = _token_axis_slip(parse_axis(axis)[0])
            if slip is not None:
                raise _error(
                    trace,
                    f"{subject}: axis '{axis}' of tensor '{name}' is not a token axis (did you "
                    f"mean '{slip}'?); only {', '.join(sorted(TOKEN_AXES))} are labelled with "
                    "tokens",
                    where,
                )
        rank = step.tensors[name].dim()
        names = [parse_axis(a)[0] for a in axes]
        fits = len(axes) == rank or (focused and "query" in names and len(axes) == rank + 1)
        if not fits:
            raise _error(
                trace,
                f"{subject}: tensor '{name}' has {rank} dimension{'s' * (rank != 1)} "
                f"{tuple(step.tensors[name].shape)} but its axes name {len(axes)}: {tuple(axes)}",
                where,
            )


TOKEN_TABLE = re.compile(r"score|weight|mask|attn|attention|logit|prob|alpha")
"""Names under which plugins that predate axes yield their tokens × tokens tables."""


def _guess_token_tables(trace: TraceView, step: Stage | SubStep) -> None:
    """Label a score or weight table that names no axes as ``(query, key)``.

    Plugins written before axes existed named none and lost every token label.
    Only a 2-d tokens × tokens tensor whose name says it is such a table is
    taken (a 3 × 3 projection beside 3 tokens is not), and the step records it
    so that every front end can say the labels were inferred.
    """
    n = len(trace.tokens)
    # A step checked twice (in a plugin's worker, then again by the tool) keeps the first
    # check's guesses: by then those tensors have axes, and the hint must still be given.
    earlier = step.guessed_axes if isinstance(step.guessed_axes, tuple) else ()
    guessed = [name for name in earlier if isinstance(name, str) and name in step.tensors]
    for name, tensor in step.tensors.items():
        if name in step.axes or n < 2 or tuple(tensor.shape) != (n, n):
            continue
        if TOKEN_TABLE.search(name):
            step.axes[name] = ("query", "key")
            guessed.append(name)
    step.guessed_axes = tuple(guessed)


def _token_axis_slip(axis: str) -> str | None:
    """The token axis ``axis`` is a typo of (``kye`` -> ``key``), or None.

    Any lower-case axis name is allowed, so only a near miss of a token axis is
    refused: it would silently lose the token labels. Names a built-in uses are fine.
    """

    if axis in COMMON_AXES:
        return None
    close = difflib.get_close_matches(axis, sorted(TOKEN_AXES), n=1, cutoff=0.6)
    return close[0] if close else None


def accumulated(
    before: torch.Tensor, weight: torch.Tensor, value: torch.Tensor
) -> torch.Tensor | None:
    """``before + weight * value`` as :class:`~tracer.equations.Accumulate` defines it, or None
    when the shapes fit neither a single weight, an outer product nor element-wise."""
    if weight.numel() == 1 and value.shape == before.shape:
        return before + weight.reshape(()) * value
    if weight.dim() > 0 and tuple(weight.shape) + tuple(value.shape) == tuple(before.shape):
        outer = weight.reshape(*weight.shape, *([1] * value.dim())) * value
        return before + outer
    try:
        product = weight * value
    except RuntimeError:  # shapes that do not broadcast
        return None
    if product.shape != before.shape:
        return None
    return before + product


def _check_equation(
    trace: TraceView, subject: str, step: SubStep, equation: object, where: Location
) -> None:
    names: tuple[str, ...]
    if isinstance(equation, Dot):
        names = (equation.a, equation.b, equation.result)
    elif isinstance(equation, Accumulate):
        names = (equation.before, equation.weight, equation.value, equation.after)
    else:
        raise _error(trace, f"{subject}: equation must be Dot(...) or Accumulate(...)", where)
    missing = [n for n in names if n not in step.tensors]
    if missing:
        raise _error(
            trace, f"{subject}: its equation names '{missing[0]}', which it does not yield", where
        )
    tensors = [step.tensors[n].detach() for n in names]
    # Compare in the variant's own float32 when it used it throughout, else in float64.
    same = all(x.dtype == torch.float32 and x.device.type == "cpu" for x in tensors)
    t = {n: x if same else x.to("cpu", torch.float64) for n, x in zip(names, tensors, strict=True)}
    if isinstance(equation, Dot):
        a, b, result = t[equation.a], t[equation.b], t[equation.result]
        if a.dim() != 1 or a.shape != b.shape or result.numel() != 1:
            raise _error(
                trace,
                f"{subject}: Dot needs two 1-d tensors of one length and a single result, got "
                f"{tuple(a.shape)}, {tuple(b.shape)} and {tuple(result.shape)}",
                where,
            )
        expected = torch.dot(a, b)
        actual = result.reshape(())
        claim = f"{equation.a} · {equation.b} = {expected.item():.4f}, not {actual.item():.4f}"
    else:
        before, weight, value = t[equation.before], t[equation.weight], t[equation.value]
        actual = t[equation.after]
        update = accumulated(before, weight, value)
        if update is None or before.shape != actual.shape:
            raise _error(
                trace,
                f"{subject}: Accumulate needs before and after of one shape and a weight that is "
                "a single number, one whose shape followed by the value's is theirs (an outer "
                "product) or one that broadcasts with the value to it; got weight "
                f"{tuple(weight.shape)}, before {tuple(before.shape)}, value "
                f"{tuple(value.shape)} and after {tuple(actual.shape)}",
                where,
            )
        expected = update
        claim = f"{equation.before} + {equation.weight} × {equation.value} is not {equation.after}"
    if not torch.allclose(expected, actual, rtol=1e-4, atol=1e-5, equal_nan=True):
        raise _error(trace, f"{subject}: its equation does not hold: {claim}", where)


def _error(trace: TraceView, message: str, where: Location) -> VariantRunError:
    return VariantRunError(f"variant '{trace.variant.name}' {message}", where)


def _check_stage_equation(
    trace: TraceView, subject: str, step: Stage, equation: object, where: Location
) -> None:
    """A stage's declared equation, evaluated on the tensors it names and compared with its
    result within float tolerance (with a query focused, the query's row of the result)."""
    if not isinstance(equation, STAGE_EQUATIONS):
        raise _error(
            trace,
            f"{subject}: equation must be MatMul, Elementwise, Sum, Difference or AddBias "
            f"(from tracer), got {type(equation).__name__}",
            where,
        )
    formula = equation_formula(equation)

    def find(name: object) -> torch.Tensor:
        if isinstance(name, (int, float)) and not isinstance(name, bool):
            return torch.tensor(float(name), dtype=torch.float64)
        if isinstance(name, str):
            if name in step.tensors:
                return step.tensors[name]
            for done in reversed(trace.stages):
                if name in done.tensors:
                    return done.tensors[name]
            params = trace.context.params
            if name in params:
                return params[name]
        raise _error(
            trace,
            f"{subject}: its equation {formula} names {name!r}, which is none of its tensors, "
            "an earlier stage's tensor or a parameter",
            where,
        )

    result_name: str = equation.result
    if result_name not in step.tensors:
        raise _error(
            trace,
            f"{subject}: its equation {formula} gives {result_name!r}, which is not one of its "
            f"tensors ({', '.join(step.tensors) or 'none'})",
            where,
        )
    # float64 where it is cheap; a large stage in float32, as the variant computed it.
    work = torch.float64 if step.tensors[result_name].numel() <= EXACT_ELEMENTS else torch.float32
    actual = step.tensors[result_name].detach().to("cpu", work)

    def get(name: object) -> torch.Tensor:
        return find(name).detach().to("cpu", work)

    try:
        rows = _sampled_rows(equation, get, actual)
        if rows is not None and isinstance(equation, MatMul):
            # A product too large to redo whole is checked on rows spread over it.
            a, b = get(equation.a), _right(equation, get)
            expected = torch.matmul(a[..., rows, :], b)
            if equation.scale is not None:
                expected = expected * _single(get, equation.scale)
            actual = actual[..., rows, :]
        else:
            expected = _evaluate(equation, get)
    except (RuntimeError, ValueError) as exc:
        raise _error(
            trace, f"{subject}: its equation {formula} cannot be computed: {_first(exc)}", where
        ) from None
    expected = _focused(trace, step, result_name, expected, actual)
    if tuple(expected.shape) != tuple(actual.shape):
        raise _error(
            trace,
            f"{subject}: its equation {formula} makes shape {tuple(expected.shape)}, but "
            f"'{result_name}' is {tuple(actual.shape)}",
            where,
        )
    if not torch.allclose(expected, actual, rtol=1e-4, atol=1e-5, equal_nan=True):
        worst = int((expected - actual).abs().nan_to_num(0.0).flatten().argmax().item())
        cell = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), actual.shape))
        raise _error(
            trace,
            f"{subject}: its equation does not hold: {formula} gives "
            f"{expected.flatten()[worst].item():.4f} at {cell or '()'}, but '{result_name}' is "
            f"{actual.flatten()[worst].item():.4f}",
            where,
        )


EXACT_ELEMENTS = 2**22
"""Results up to this many values are checked in float64; larger ones in float32."""
PRODUCT_BUDGET = 2**31
"""Multiply-adds one matrix-product check may cost; beyond, it is checked on sampled rows."""
SAMPLED_ROWS = 64


def _right(equation: MatMul, get: Callable[[object], torch.Tensor]) -> torch.Tensor:
    b = get(equation.b)
    return b.transpose(-1, -2) if equation.transpose_b and b.dim() > 1 else b


def _sampled_rows(
    equation: object, get: Callable[[object], torch.Tensor], actual: torch.Tensor
) -> torch.Tensor | None:
    """Rows spread over the result, when a matrix product is too large to redo whole (a
    16,384-token score matrix); None to check it whole."""
    if not isinstance(equation, MatMul):
        return None
    a, b = get(equation.a), _right(equation, get)
    if a.dim() < 2 or b.dim() < 2 or a.numel() * b.shape[-1] <= PRODUCT_BUDGET:
        return None
    if actual.dim() != max(a.dim(), b.dim()) or actual.shape[-2] != a.shape[-2]:
        return None  # a focused row or a broadcast: redone whole
    rows = sorted({round(i * (a.shape[-2] - 1) / (SAMPLED_ROWS - 1)) for i in range(SAMPLED_ROWS)})
    return torch.tensor(rows, dtype=torch.long)


def _evaluate(equation: object, get: Callable[[object], torch.Tensor]) -> torch.Tensor:
    if isinstance(equation, MatMul):
        b = _right(equation, get)
        made = torch.matmul(get(equation.a), b)
        return made * _single(get, equation.scale) if equation.scale is not None else made
    if isinstance(equation, Elementwise):
        if equation.function not in ELEMENTWISE:
            raise ValueError(
                f"unknown function {equation.function!r}{did_you_mean(equation.function, ELEMENTWISE)}"
                f"; use one of {', '.join(ELEMENTWISE)}"
            )
        inner = get(equation.x) * _single(get, equation.before)
        if equation.function == "softmax":
            made = torch.softmax(inner, dim=-1)
        elif equation.function in ("elu", "gelu", "silu", "softplus"):
            made = getattr(torch.nn.functional, equation.function)(inner)
        else:
            made = getattr(torch, equation.function)(inner)
        return made * _single(get, equation.after)
    if isinstance(equation, (Sum, Difference)):
        sign = 1.0 if isinstance(equation, Sum) else -1.0
        return get(equation.a) + sign * _single(get, equation.weight) * get(equation.b)
    assert isinstance(equation, AddBias)
    return get(equation.x) + get(equation.bias)


def _single(get: Callable[[object], torch.Tensor], scale: object) -> torch.Tensor:
    value = get(scale)
    if value.numel() != 1:
        raise ValueError(f"{scale!r} must be a single number, got shape {tuple(value.shape)}")
    return value.reshape(())


def _focused(
    trace: TraceView, step: Stage, name: str, expected: torch.Tensor, actual: torch.Tensor
) -> torch.Tensor:
    """With a query focused, the result is that query's slice: take it from the full product."""
    query = trace.context.query
    axes = [parse_axis(a)[0] for a in step.axes.get(name, ())]
    if (
        query is not None
        and expected.dim() == actual.dim() + 1
        and "query" in axes
        and len(axes) == actual.dim() + 1
        and axes.index("query") < expected.dim()
        and query < expected.shape[axes.index("query")]
    ):
        return expected.select(axes.index("query"), query)
    return expected


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
