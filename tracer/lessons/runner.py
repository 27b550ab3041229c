"""Computing what each step of a lesson shows, live, from the installed variants.

Public API::

    from tracer.lessons.runner import LessonRunner
    runner = LessonRunner(lesson, host)
    shown = runner.tensor(step.ref)            # a Resolved: the tensor, its name, tokens, query
    for sub in runner.substeps(loop_step): ... # the loop's SubSteps, lazily, up to step.limit
    left, right, difference = runner.compare(compare_step)
    runner.answer(quiz)                         # float for number quizzes, choice index otherwise
    runner.is_right(quiz, "0.95")               # True/False

Traces are cached per (variant, options, query), so a lesson that shows ten
stages of one variant runs it once. Anything a lesson asks for that the run
cannot give (a tensor the stage does not have, a cell out of range, an
operation that does not fit the tensor's shape) raises :class:`StepError`,
which :func:`tracer.lessons.check.check_lesson` turns into a positioned problem.
This module imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch

from tracer.errors import EXIT_PROBLEMS, TracerError
from tracer.lessons.model import Compare, Lesson, Loop, Operation, Options, Quiz, TensorRef
from tracer.runner import DEFAULT_D_OUT, TraceOptions
from tracer.suggest import did_you_mean
from tracer.variant import Stage, SubStep

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


class LessonRunner:
    """Runs the variants a lesson refers to, caching one trace per (variant, options, query)."""

    def __init__(self, lesson: Lesson, host: PluginHost) -> None:
        self.lesson = lesson
        self.host = host
        self._traces: dict[tuple[object, ...], Trace] = {}

    def start(self, variant: str, options: Options, query: int | None) -> Trace:
        """A fresh trace (nothing runs until it is iterated)."""
        from tracer.runner import start_trace

        assert options.inputs is not None
        trace_options = TraceOptions(
            inputs=options.inputs,
            seed=options.seed if options.seed is not None else 123,
            init=options.init or "rand",
            d_out=options.d_out if options.inputs.d_out is None else None,
            dropout=options.dropout or 0.0,
            query=query,
            extra={} if options.heads is None else {"heads": options.heads},
        )
        return start_trace(variant, trace_options, self.host)

    def trace(self, variant: str, options: Options, query: int | None) -> Trace:
        key = (
            variant,
            id(options.inputs),
            options.seed,
            options.init,
            options.d_out or DEFAULT_D_OUT,
            options.dropout,
            options.heads,
            query,
        )
        if key not in self._traces:
            self._traces[key] = self.start(variant, options, query)
        return self._traces[key]

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
        for operation in ref.then:
            try:
                tensor = apply(operation, tensor)
            except RuntimeError as exc:  # torch refusing, e.g. for a dtype: say which step
                detail = " ".join(str(exc).split())
                raise StepError(f"'{describe(operation)}' failed on '{label}': {detail}") from None
            label += f" → {describe(operation)}"
        return Resolved(ref, label, tensor, trace.tokens, ref.query, stage)

    def tensors(self, ref: TensorRef) -> list[Resolved]:
        """What a ``show`` step displays: the named tensor or, when ``ref.tensor`` is None and
        there are no operations, every tensor of the stage (the first is the focused one)."""
        main = self.tensor(ref)
        if ref.tensor is not None or ref.then:
            return [main]
        names = list(main.stage.tensors)[1:]
        return [main, *(self.tensor(replace(ref, tensor=name)) for name in names)]

    def value(self, ref: TensorRef) -> float:
        """The single number ``ref`` names: its ``cell``, or the whole tensor if it is one value."""
        resolved = self.tensor(ref)
        tensor = resolved.tensor
        cell = ref.cell or ()
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
        for item in trace:
            if isinstance(item, SubStep) and item.stage == step.stage:
                yield item
                shown += 1
                if step.limit is not None and shown >= step.limit:
                    return
            elif isinstance(item, Stage) and item.name == step.stage:
                return

    def compare(self, step: Compare) -> tuple[Resolved, Resolved, torch.Tensor | None]:
        """Both sides and ``right - left`` (None when their shapes differ)."""
        left = self.tensor(step.left)
        right = self.tensor(step.right)
        if left.tensor.shape != right.tensor.shape:
            return left, right, None
        return left, right, right.tensor - left.tensor

    def answer(self, quiz: Quiz) -> float | int:
        """The right answer: a number, or the index of the right choice."""
        if isinstance(quiz.answer, TensorRef):
            return self.value(quiz.answer)
        return quiz.answer

    def is_right(self, quiz: Quiz, response: str | float) -> bool:
        """Whether a learner's response is right: within tolerance, or the right choice.

        A choice may be given as its text, or as its letter (``a``, ``b``...) or number (``1``...).
        """
        answer = self.answer(quiz)
        text = str(response).strip()
        if quiz.quiz_kind == "choice":
            if text in quiz.choices:
                return quiz.choices.index(text) == answer
            if len(text) == 1 and text.isalpha():
                return ord(text.lower()) - ord("a") == answer
            return text.isdigit() and int(text) - 1 == answer
        try:
            guess = float(text)
        except ValueError:
            return False
        # A hair of slack, so "0.95" is right for 0.9544 with tolerance 0.0044 despite rounding.
        return math.isfinite(guess) and abs(guess - float(answer)) <= quiz.tolerance + 1e-9


def describe(operation: Operation) -> str:
    if operation.argument is True:
        return operation.name
    argument = operation.argument
    shown = f"{argument:g}" if isinstance(argument, float) else str(argument)
    return f"{operation.name}({shown})"


def apply(operation: Operation, tensor: torch.Tensor) -> torch.Tensor:
    """One operation; StepError when it does not fit the tensor."""
    name, argument = operation.name, operation.argument
    if tensor.dtype == torch.bool or not tensor.is_floating_point():
        tensor = tensor.float()  # a mask counts as 0/1, so 'sum' counts hidden keys
    if name == "scale":
        return tensor * float(argument)
    if name == "exp":
        return torch.exp(tensor)
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
    if name == "pick":
        index = int(argument)
        if tensor.dim() == 0 or not 0 <= index < tensor.shape[0]:
            size = tensor.shape[0] if tensor.dim() else 0
            raise StepError(
                f"'pick: {index}' is out of range: the first dimension has {size} entries"
            )
        return tensor[index].clone()
    dim = int(argument)
    # A single value is a list of one here: softmax over one score is still a softmax (seed 002).
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
    else:
        result = data.sum(dim=dim)
    return result.reshape(()) if tensor.dim() == 0 else result


def _shape(tensor: torch.Tensor) -> str:
    return "×".join(str(n) for n in tensor.shape) or "() (a single value)"
