"""Computing what each step of a lesson shows, live, from the installed variants.

Public API::

    from tracer.lessons.lesson_runner import LessonRunner
    runner = LessonRunner(lesson, host)
    shown = runner.tensor(step.ref)            # a Resolved: the tensor, its name, tokens, query
    for sub in runner.substeps(loop_step): ... # the loop's SubSteps, lazily, up to step.limit
    left, right, difference = runner.compare(compare_step)
    runner.answer(quiz)                         # a number, a choice index, indices or cells
    runner.is_right(quiz, "0.95")               # True/False (see tracer.lessons.grading)
    runner.text(step.caption)                   # prose with its live values filled in

Traces are cached per (variant, options, query), so a lesson that shows ten
stages of one variant runs it once. Anything a lesson asks for that the run
cannot give (a tensor the stage does not have, a cell out of range, an
operation that does not fit the tensor's shape) raises :class:`StepError`,
which :func:`tracer.lessons.check.check_lesson` turns into a positioned problem.
This module imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from tracer.errors import EXIT_PROBLEMS, Location, TracerError
from tracer.lessons.grading import Answer, CellAnswer, answer_text, grade
from tracer.lessons.model import (
    Compare,
    Focus,
    Lesson,
    Loop,
    Operation,
    Options,
    Quiz,
    TensorRef,
)
from tracer.lessons.prose import INTEGRAL_OPERATIONS, live_text
from tracer.options import LEGACY_OPTIONS, option_for
from tracer.render.labels import effective_axes, label_axes
from tracer.suggest import did_you_mean
from tracer.tracing.runner import DEFAULT_D_OUT, TraceOptions, start_trace
from tracer.variant import TOKEN_AXES, Stage, SubStep, parse_axis, source_tokens

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost
    from tracer.tracing import Trace


class StepError(TracerError):
    """A step asks for something its run does not have (exit status 1, like other lesson problems)."""

    exit_status = EXIT_PROBLEMS


@dataclass(frozen=True)
class Resolved:
    """A tensor a step shows, with what is needed to label it."""

    ref: TensorRef
    name: str
    """``stage.tensor`` name, plus any operations, e.g. ``scaled.scaled → softmax(0)``."""
    tensor: torch.Tensor
    tokens: tuple[str, ...]
    query: int | None
    stage: Stage

    @property
    def axes(self) -> tuple[str, ...] | None:
        """The axis names of ``tensor``: the stage's, followed through the lesson's operations.

        None when an operation's effect on the axes is not certain: then the
        tensor is labelled by index, never with guessed tokens.
        """
        if not self.ref.then:
            name = self.ref.tensor or next(iter(self.stage.tensors), "")
            if name not in self.stage.tensors:
                return None
            return self.stage.axes.get(name)  # as the variant named them (focus contract)
        names = axes_before(self)
        for operation in self.ref.then:
            if names is None:
                return None
            names = axes_after(names, operation)
        if names is None:
            return None
        return tuple(names) if len(names) == self.tensor.dim() else None


Fact = TypeVar("Fact")


class LessonRunner:
    """Runs the variants a lesson refers to, caching one trace per (variant, options, query)."""

    def __init__(self, lesson: Lesson, host: PluginHost) -> None:
        self.lesson = lesson
        self.host = host
        self._traces: dict[tuple[object, ...], Trace] = {}
        self._facts: dict[str, Any] = {}

    def once(self, name: str, compute: Callable[[], Fact]) -> Fact:
        """A fact about the whole lesson as this runner runs it (every quiz's answer, the
        numbers its prose states, ...), computed the first time it is asked for."""
        if name not in self._facts:
            self._facts[name] = compute()
        found: Fact = self._facts[name]
        return found

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.lesson.inputs.tokens

    def start(self, variant: str, options: Options, query: int | None) -> Trace:
        """A fresh trace (nothing runs until it is iterated)."""
        assert options.inputs is not None
        trace_options = TraceOptions(
            inputs=options.inputs,
            seed=options.seed if options.seed is not None else 123,
            init=options.init or "rand",
            d_out=options.d_out if options.inputs.d_out is None else None,
            dropout=options.dropout or 0.0,
            query=query,
            options=self.variant_options(variant, options),
        )
        return start_trace(variant, trace_options, self.host)

    def variant_options(self, variant: str, options: Options) -> dict[str, object]:
        """The variant's own options a run of ``variant`` under ``options`` is given."""
        found = self.host.variants.get(variant)
        # Options the grammar checked; a legacy one (heads) a variant does not take is left out.
        return {
            name: value
            for name, value in options.variant_options().items()
            if found is None or name not in LEGACY_OPTIONS or option_for(found, name) is not None
        }

    def trace(self, variant: str, options: Options, query: int | None) -> Trace:
        key = (
            variant,
            id(options.inputs),
            options.seed,
            options.init,
            options.d_out or DEFAULT_D_OUT,
            options.dropout,
            tuple(sorted((k, repr(v)) for k, v in self.variant_options(variant, options).items())),
            query,
        )
        if key not in self._traces:
            self._traces[key] = self.start(variant, options, query)
        return self._traces[key]

    def close(self) -> None:
        """Stop every run this runner started (a plugin's worker process is stopped now,
        not whenever the collector finds it); for when the lesson is done with."""
        for trace in self._traces.values():
            trace.close()
        self._traces.clear()

    def tensor(self, ref: TensorRef) -> Resolved:
        """The tensor ``ref`` names, after its operations (not yet picking ``ref.cell``)."""
        trace = self.trace(ref.variant, ref.options, ref.query)
        try:
            stage = trace.stage(ref.stage)
        except KeyError:
            raise StepError(f"variant '{ref.variant}' produced no stage '{ref.stage}'") from None
        names = list(stage.tensors)
        name = ref.tensor or names[0]
        if name not in stage.tensors:
            raise StepError(
                f"stage '{ref.stage}' of '{ref.variant}' has no tensor '{name}'"
                f"{did_you_mean(name, names)}; its tensors: {', '.join(names)}"
            )
        tensor = stage.tensors[name].detach()
        label = f"{ref.stage}.{name}" if name != ref.stage else name
        declared = stage.axes.get(name)
        shown = effective_axes(tuple(tensor.shape), declared, ref.query) if declared else None
        axes = list(shown) if shown is not None else None
        for written in ref.then:
            operation = read_pick(written, axes, trace.tokens)
            if axes is not None:
                axes = axes_after(axes, operation)
            other = None
            if isinstance(operation.argument, TensorRef):
                other = self.operand(operation.argument)
            try:
                tensor = apply(operation, tensor, other)
            except StepError as exc:
                raise _at(exc, operation) from None
            except RuntimeError as exc:  # torch refusing, e.g. for a dtype: say which step
                detail = " ".join(str(exc).split())
                error = StepError(f"'{describe(operation)}' failed on '{label}': {detail}")
                raise _at(error, operation) from None
            label += f" → {describe(operation)}"
        return Resolved(ref, label, tensor, trace.tokens, ref.query, stage)

    def focus_of(self, focus: Focus, resolved: Resolved) -> Focus:
        """``focus`` as the table's axes read it: a token in both sequences of a
        cross-attention run is the source's on a key or source axis (a weights table's
        columns), as ``cell:`` reads it (:meth:`cell_of`), and the target's elsewhere."""
        if not any(focus.names):
            return focus
        axes = resolved.axes
        if not axes:
            return focus
        row_axis = axes[0] if len(axes) == 2 else None
        row = _on_axis(focus.row, focus.names[0], row_axis, resolved.tokens)
        column = _on_axis(focus.column, focus.names[1], axes[-1], resolved.tokens)
        return replace(focus, row=row, column=column)

    def tensors(self, ref: TensorRef) -> list[Resolved]:
        """What a ``show`` step displays: the named tensor or, when ``ref.tensor`` is None and
        there are no operations, every tensor of the stage (the first is the focused one)."""
        main = self.tensor(ref)
        if ref.tensor is not None or ref.then:
            return [main]
        names = list(main.stage.tensors)[1:]
        return [main, *(self.tensor(replace(ref, tensor=name)) for name in names)]

    def operand(self, ref: TensorRef) -> torch.Tensor:
        """The second tensor of add, subtract or multiply (one value when it has a cell)."""
        if ref.cell is not None:
            return torch.tensor(self.value(ref))
        return self.tensor(ref).tensor

    def cell_of(self, ref: TensorRef) -> tuple[int, ...] | None:
        """``ref.cell`` as the table's axes read it: a token in both sequences of a
        cross-attention run ("cat" in the target and the source) is the source's on a key
        or source axis, as the table labels it and the learner types it, and the target's
        elsewhere."""
        cell = ref.cell
        if cell is None or not any(ref.cell_names):
            return cell
        resolved = self.tensor(ref)
        source = source_tokens(resolved.tokens)
        axes = resolved.axes
        if source is None or axes is None or len(axes) != len(cell):
            return cell
        fixed = list(cell)
        for axis, (name, spec) in enumerate(zip(ref.cell_names, axes, strict=False)):
            kind, start = parse_axis(spec)
            if name and kind in ("source", "key") and name in source:
                fixed[axis] = source.index(name) - start
        return tuple(fixed)

    def value(self, ref: TensorRef) -> float:
        """The single number ``ref`` names: its ``cell``, or the whole tensor if it is one value."""
        resolved = self.tensor(ref)
        tensor = resolved.tensor
        cell = self.cell_of(ref) or ()
        if len(cell) != tensor.dim():
            shape = "×".join(str(n) for n in tensor.shape) or "single value"
            if not cell:
                raise StepError(f"'{resolved.name}' is {shape}; add a 'cell' to pick one value")
            indices = "index" if len(cell) == 1 else "indices"
            dimensions = "dimension" if tensor.dim() == 1 else "dimensions"
            raise StepError(
                f"cell has {len(cell)} {indices} but '{resolved.name}' has "
                f"{tensor.dim()} {dimensions} ({shape})"
            )
        for axis, (index, size) in enumerate(zip(cell, tensor.shape, strict=True)):
            if not 0 <= index < size:
                raise StepError(
                    f"cell index {index} is out of range for axis {axis} of '{resolved.name}', "
                    f"which has {size} entries (0 to {size - 1})"
                )
        return float(tensor[cell].item())

    def substeps(self, step: Loop) -> Iterator[SubStep]:
        """The sub-steps that build ``step.stage``, on a fresh trace, at most ``step.limit``."""
        trace = self.start(step.variant, step.options, step.query)
        shown = 0
        try:
            for item in trace:
                if isinstance(item, SubStep) and item.stage == step.stage:
                    yield item
                    shown += 1
                    if step.limit is not None and shown >= step.limit:
                        return
                elif isinstance(item, Stage) and item.name == step.stage:
                    return
        finally:
            trace.close()  # the rest of the run is not needed: its worker process stops now

    def compare(self, step: Compare) -> tuple[Resolved, Resolved, torch.Tensor | None]:
        """Both sides and ``right - left`` (None when their shapes differ)."""
        left = self.tensor(step.left)
        right = self.tensor(step.right)
        if left.tensor.shape != right.tensor.shape:
            return left, right, None
        return left, right, _as_numbers(right.tensor) - _as_numbers(left.tensor)

    def answer(self, quiz: Quiz) -> Answer:
        """The right answer: a number, a choice's index, the right choices' indices, or the
        right cells (:class:`~tracer.lessons.grading.CellAnswer`), computed live."""
        if quiz.quiz_kind == "cells":
            assert quiz.cells is not None and isinstance(quiz.answer, TensorRef)
            return self.cell_answer(quiz.cells, quiz.answer)
        if quiz.quiz_kind == "choice" and isinstance(quiz.answer, TensorRef):
            return self.token_choice(quiz, quiz.answer)
        if isinstance(quiz.answer, TensorRef):
            value = self.value(quiz.answer)
            # A count (an integer tensor, or a count/argmax) is an int, shown as "2", not "2.0000".
            return int(value) if self.integral(quiz.answer) and value.is_integer() else value
        return quiz.answer

    def integral(self, ref: TensorRef) -> bool:
        """Whether ``ref`` names a whole number: an integer tensor, or a count or an argmax."""
        if ref.then:
            return ref.then[-1].name in INTEGRAL_OPERATIONS
        tensor = self.tensor(ref).tensor
        return not (tensor.is_floating_point() or tensor.is_complex())

    def index_tokens(self, ref: TensorRef) -> tuple[str, ...]:
        """The tokens an index ``ref`` computes (an argmax) is a position of.

        The main sequence's, unless the argmax ran over an axis of a second sequence: a
        ``source`` axis, or with one (cross-attention) a ``key`` axis, whose positions are
        source tokens ("chat attends most to cat", not to the target's third token).
        """
        main = ref.options.inputs.tokens if ref.options.inputs is not None else self.tokens
        if not ref.then or ref.then[-1].name != "argmax":
            return main
        try:
            before = self.tensor(replace(ref, then=ref.then[:-1], cell=None))
        except TracerError:
            return main
        source = source_tokens(before.tokens)
        axes = before.axes
        if source is None or axes is None:
            return main
        argument = ref.then[-1].argument
        dim = 0 if argument is True else argument
        if not isinstance(dim, int) or isinstance(dim, bool) or not -len(axes) <= dim < len(axes):
            return main
        name = axes[dim].partition(":")[0]
        return tuple(source) if name in ("source", "key") else main

    def token_choice(self, quiz: Quiz, ref: TensorRef) -> int:
        """The choice named by a computed token index (e.g. an argmax)."""
        value = self.value(ref)
        tokens = self.index_tokens(ref)
        if not (math.isfinite(value) and value == int(value) and 0 <= value < len(tokens)):
            raise StepError(
                f"the answer is {value:g}, which is not a token's index (0 to {len(tokens) - 1}); "
                "a choice answer computes one, e.g. with 'argmax'"
            )
        token = tokens[int(value)]
        if token not in quiz.choices:
            raise StepError(
                f"the computed answer is '{token}', which is not one of the choices "
                f"({', '.join(quiz.choices)})"
            )
        return quiz.choices.index(token)

    def cell_answer(self, shown: TensorRef, right: TensorRef) -> CellAnswer:
        table = self.tensor(shown)
        mask = self.tensor(right)
        if tuple(mask.tensor.shape) != tuple(table.tensor.shape):
            raise StepError(
                f"the answer '{mask.name}' is {_shape(mask.tensor)} but the cells are selected "
                f"from '{table.name}', which is {_shape(table.tensor)}; they must be the same shape"
            )
        if table.tensor.dim() not in (1, 2):
            raise StepError(
                f"cells are selected from a row or a table; '{table.name}' is {_shape(table.tensor)}"
            )
        cells = frozenset(
            tuple(int(i) for i in index) for index in torch.nonzero(mask.tensor).tolist()
        )
        # A derived table (a row picked, a transpose) keeps the labels its operations keep,
        # as it is drawn: the tokens its own table shows are what the learner types.
        axes = table.axes
        labels = label_axes(tuple(table.tensor.shape), axes, table.tokens, table.query)
        source = source_tokens(table.tokens)
        sequences = () if source is None else (("target", tuple(table.tokens)), ("source", source))
        return CellAnswer(
            cells, tuple(table.tensor.shape), tuple(a.labels for a in labels), sequences
        )

    def is_right(self, quiz: Quiz, response: str | float) -> bool:
        """Whether a learner's response is right (see :func:`tracer.lessons.grading.grade`)."""
        return grade(quiz, self.answer(quiz), str(response)).right is True

    def answer_text(self, quiz: Quiz) -> str:
        """The right answer as the learner should see it."""
        return answer_text(quiz, self.answer(quiz))

    def text(self, prose: str, quiz: Quiz | None = None) -> str:
        """Prose with its live values filled in (:func:`tracer.lessons.prose.live_text`)."""
        return live_text(prose, self, quiz=quiz)


def _at(error: StepError, operation: Operation) -> StepError:
    """``error`` positioned at the operation that caused it (when it was read from a file)."""
    if operation.line:
        error.location = Location("", operation.line, operation.column)
    return error


def describe(operation: Operation) -> str:
    if operation.argument is True:
        return operation.name
    argument = operation.argument
    if isinstance(argument, TensorRef):
        shown = f"{argument.stage}.{argument.tensor}" if argument.tensor else argument.stage
    else:
        shown = f"{argument:g}" if isinstance(argument, float) else str(argument)
    return f"{operation.name}({shown})"


def _along(dim: object) -> str:
    if dim == -1:
        return "along each row"
    if dim == 0:
        return "down each column"
    return f"over axis {dim}"


_WHOLE_WORDS = {
    "max": "the largest value",
    "min": "the smallest value",
    "mean": "the mean of all values",
    "std": "the standard deviation of all values",
    "argmax": "the position of the largest value",
    "count": "the number of values that are not 0",
    "size": "the number of values",
}
_ALONG_WORDS = {
    "softmax": "softmax",
    "normalize": "each value divided by the sum",
    "sum": "the sum",
    "max": "the largest value",
    "min": "the smallest value",
    "mean": "the mean",
    "std": "the standard deviation",
    "argmax": "the position of the largest value",
    "count": "the number of values that are not 0",
}


_OPERATOR_WORDS = {"add": "plus", "subtract": "minus", "multiply": "times", "divide": "divided by"}
"""How :func:`explain` reads an arithmetic operation to a learner."""


def explain(operation: Operation) -> str:
    """One operation in words, for a learner (``{scale: 100}`` is "multiplied by 100");
    :func:`describe` is the lesson file's own spelling, for its author."""
    name, argument = operation.name, operation.argument
    if isinstance(argument, TensorRef):
        other = f"{argument.stage}.{argument.tensor}" if argument.tensor else argument.stage
        return f"{_OPERATOR_WORDS.get(name, name)} {other}"
    shown = f"{argument:g}" if isinstance(argument, float) else str(argument)
    if name == "scale":
        return f"multiplied by {shown}"
    if name in _OPERATOR_WORDS:
        return f"{_OPERATOR_WORDS[name]} {shown}"
    if name == "exp":
        return "e to the power of each value"
    if name == "abs":
        return "the size of each value (signs dropped)"
    if name == "compare":
        return f"1 where the value is {shown}, else 0"
    if name == "diagonal":
        return "the diagonal"
    if name == "transpose":
        return "rows and columns swapped"
    if name == "pick":
        return f"entry {shown} of the first axis"
    if argument is True and name in _WHOLE_WORDS:
        return _WHOLE_WORDS[name]
    if name == "size":
        return f"the length of axis {shown}"
    return f"{_ALONG_WORDS.get(name, name)} {_along(argument)}"


def _on_axis(index: int | None, name: str, axis: str | None, tokens: tuple[str, ...]) -> int | None:
    """``index`` (read from token ``name`` as the target's), read along ``axis`` instead: on a
    key or source axis of a run with a source, the source's ``name``."""
    source = source_tokens(tokens)
    if index is None or not name or axis is None or source is None:
        return index
    kind, start = parse_axis(axis)
    if kind in ("source", "key") and name in source:
        return source.index(name) - start
    return index


def read_pick(operation: Operation, axes: list[str] | None, tokens: tuple[str, ...]) -> Operation:
    """``operation`` with a ``pick`` written as a token read along the axis it picks from
    (the first of ``axes``): on a key or source axis of a cross-attention run, a token of
    both sequences is the source's, as the table labels it."""
    if operation.name != "pick" or not operation.token or not axes:
        return operation
    index = operation.argument
    if not isinstance(index, int) or isinstance(index, bool):
        return operation
    fixed = _on_axis(index, operation.token, axes[0], tokens)
    return operation if fixed is None or fixed == index else replace(operation, argument=fixed)


def _token_square(names: list[str]) -> bool:
    """Whether axes ``names`` are two axes of the same tokens (queries and keys of one
    sequence, not a source), so a diagonal pairs each token with itself."""
    kinds = [parse_axis(name)[0] for name in names]
    return len(kinds) == 2 and all(kind in ("token", "query", "key") for kind in kinds)


def axes_before(resolved: Resolved) -> list[str] | None:
    """The axis names of the tensor a derived table starts from (None: not named)."""
    name = resolved.ref.tensor or next(iter(resolved.stage.tensors), "")
    axes, original = resolved.stage.axes.get(name), resolved.stage.tensors.get(name)
    if axes is None or original is None:
        return None
    shown = effective_axes(tuple(original.shape), axes, resolved.query)
    return list(shown) if shown is not None else None


_SAME_AXES = ("softmax", "normalize", "scale", "exp", "abs")
"""Operations that keep every axis as it was."""


def axes_after(names: list[str], operation: Operation) -> list[str] | None:
    """Axis ``names`` after ``operation``; None where its effect on them is not certain."""
    name, argument = operation.name, operation.argument
    if name in _SAME_AXES:
        return names
    if name == "transpose" and len(names) == 2:
        return names[::-1]
    if name == "diagonal" and _token_square(names):
        return names[:1]  # a token with itself: the rows' tokens label it
    if name == "pick" and names:
        return names[1:]
    if (
        name == "sum"
        and isinstance(argument, int)
        and not isinstance(argument, bool)
        and -len(names) <= argument < len(names)
    ):
        kept = list(names)
        kept.pop(argument)
        return kept
    return None


def explain_steps(resolved: Resolved) -> list[str]:
    """Each of a derived table's operations in words (:func:`explain`), a ``pick`` named by
    the axis it picks from as far as the axes are known: 'the query "journey"', "head 1",
    not "row 1" of a table that has no rows left."""
    names = axes_before(resolved)
    words = []
    for written in resolved.ref.then:
        operation = read_pick(written, names, resolved.tokens)
        argument = operation.argument
        if (
            operation.name == "pick"
            and isinstance(argument, int)
            and not isinstance(argument, bool)
        ):
            words.append(_picked(argument, names[0] if names else None, resolved.tokens))
        elif names is not None and len(names) < 2 and operation.name in _ALONG_WORDS:
            # "along each row" of a table that is one row, or one number, would mislead.
            over = "over its values" if names else "of its one value"
            words.append(f"{_ALONG_WORDS[operation.name]} {over}")
        else:
            words.append(explain(operation))
        if names is not None:
            names = axes_after(names, operation)
    return words


def _picked(index: int, axis: str | None, tokens: tuple[str, ...]) -> str:
    if axis is None:
        return f"entry {index} of the first axis"
    kind = parse_axis(axis)[0]
    source = source_tokens(tokens)
    # A source's axis, or the keys of a run with a source (cross-attention), as labelled.
    labels = source if kind == "source" or (kind == "key" and source) else tokens
    if kind in TOKEN_AXES and labels is not None and 0 <= index < len(labels):
        return f'the {kind} "{labels[index]}"'
    return f"{kind} {index}"


WHOLE_REDUCTIONS = ("max", "min", "mean", "std", "argmax", "count", "size")
_COMPARE = {
    ">=": torch.ge,
    "<=": torch.le,
    "==": torch.eq,
    "!=": torch.ne,
    ">": torch.gt,
    "<": torch.lt,
}


def apply(
    operation: Operation, tensor: torch.Tensor, other: torch.Tensor | None = None
) -> torch.Tensor:
    """One operation (``other``: the second tensor of add, subtract, multiply, divide);
    StepError when it does not fit the tensor (or divides by 0)."""
    name, argument = operation.name, operation.argument
    if tensor.dtype == torch.bool or not tensor.is_floating_point():
        tensor = tensor.float()  # a mask counts as 0/1, so 'sum' counts hidden keys
    if name == "pick":
        # As written, exactly: a float would round -10**25 (and overflow far beyond).
        index = argument if isinstance(argument, int) else 0
        if tensor.dim() == 0:
            raise StepError(f"'pick: {index}' has nothing to pick from: this is a single value")
        size = tensor.shape[0]
        if not 0 <= index < size:
            valid = f"valid indices are 0 to {size - 1:,}" if size else "it is empty"
            raise StepError(
                f"'pick: {index}' is out of range: the first dimension has {size:,} entries, "
                f"so {valid} (indices start at 0)"
            )
        return tensor[index].clone()
    number = float(argument) if isinstance(argument, (int, float)) else 0.0
    if name == "scale":
        return tensor * number
    if name == "exp":
        return torch.exp(tensor)
    if name == "abs":
        return tensor.abs()
    if name in ("add", "subtract", "multiply", "divide"):
        operand = other.float() if other is not None else torch.tensor(number)
        if operand.dim() and tuple(operand.shape) != tuple(tensor.shape):
            raise StepError(
                f"'{name}' needs two tensors of the same shape, not {_shape(tensor)} "
                f"and {_shape(operand)}"
            )
        if name == "divide":
            zero = (operand == 0).nonzero().tolist()
            if zero:  # no inf or nan reaches a learner as an answer
                where = f" at {tuple(zero[0])}" if operand.dim() else ""
                raise StepError(f"'divide' by 0{where}: the divisor has a 0 there")
            return tensor / operand
        if name == "add":
            return tensor + operand
        return tensor - operand if name == "subtract" else tensor * operand
    if name == "compare":
        operator, _, bound = str(argument).partition(" ")
        return _COMPARE[operator](tensor, float(bound)).float()
    if argument is True and name in WHOLE_REDUCTIONS:
        return _whole(name, tensor)
    if name == "diagonal":
        if tensor.dim() != 2 or tensor.shape[0] != tensor.shape[1]:
            raise StepError(
                f"'diagonal' needs a square table, not a tensor of shape {_shape(tensor)}"
            )
        return torch.diagonal(tensor).clone()
    if name == "transpose":
        if tensor.dim() != 2:
            raise StepError(f"'transpose' needs a table, not a tensor of shape {_shape(tensor)}")
        return tensor.T.clone()
    dim = int(number)
    # A single value is a list of one here: softmax over one score is still a softmax.
    data = tensor.reshape(1) if tensor.dim() == 0 else tensor
    if not -data.dim() <= dim < data.dim():
        raise StepError(
            f"'{name}' over dimension {dim}: a tensor of shape {_shape(tensor)} has dimensions "
            f"{', '.join(str(d) for d in range(data.dim()))} (or -1 for the last)"
        )
    if name == "softmax":
        result = torch.softmax(data, dim=dim)
    elif name == "normalize":
        result = data / data.sum(dim=dim, keepdim=True)
    elif name == "sum":
        result = data.sum(dim=dim)
    elif name == "max":
        result = data.amax(dim=dim)
    elif name == "min":
        result = data.amin(dim=dim)
    elif name == "mean":
        result = data.mean(dim=dim)
    elif name == "std":
        result = data.std(dim=dim, correction=0)
    elif name == "argmax":
        result = data.argmax(dim=dim).float()
    elif name == "size":  # the tensor's own shape, not a count of its values
        result = torch.tensor(float(tensor.shape[dim] if tensor.dim() else 1))
    else:  # count
        result = (data != 0).sum(dim=dim).float()
    return result.reshape(()) if tensor.dim() == 0 and result.dim() else result


def _whole(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """A reduction over every value: max, min, mean, std, count; argmax of one row."""
    if tensor.numel() == 0 and name != "size":
        raise StepError(f"'{name}' of an empty tensor has no value")
    if name == "max":
        return tensor.max()
    if name == "min":
        return tensor.min()
    if name == "mean":
        return tensor.mean()
    if name == "std":
        return tensor.std(correction=0)  # of the values themselves, as numpy's std
    if name == "count":
        return (tensor != 0).sum().float()
    if name == "size":
        return torch.tensor(float(tensor.numel()))
    if tensor.dim() > 1:
        raise StepError(
            f"'argmax' of a tensor of shape {_shape(tensor)} needs a dimension "
            "('argmax: -1' for each row), or 'pick' one row first"
        )
    return tensor.reshape(-1).argmax().float()


def _shape(tensor: torch.Tensor) -> str:
    return "×".join(str(n) for n in tensor.shape) or "() (a single value)"


def _as_numbers(tensor: torch.Tensor) -> torch.Tensor:
    """Masks as 0 and 1, so two masks can be subtracted (torch refuses ``bool - bool``)."""
    return tensor.to(torch.int64) if tensor.dtype == torch.bool else tensor
