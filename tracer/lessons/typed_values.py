"""Numbers typed into prose that the lesson never shows, as ``attn lesson check`` warns about
them.

A number with two decimals written into a caption, a question or a point ("pair 2.51 once")
is a value the learner is asked to trust. It must be one the lesson shows: a cell of a table
some step shows (a ``show``, ``compare`` or quiz table, a loop's sub-step tables), a live value,
a number quiz's answer, or a number of the formula shown with one of those tables (the
rotary angles' formula prints "⌈2.51⌉ = 3"). A number that is none of these, within the
rounding its decimals say, is warned at the ``file:line:column`` where it is typed::

    from tracer.lessons.typed_values import unshown_numbers
    warnings = unshown_numbers(lesson, runner, path)   # [] when every typed number is shown

Only numbers with exactly two decimals are read: positions, counts, lesson numbers, years,
``d = 8`` and exponents are whole numbers; a number with three or more decimals is refused by
:func:`tracer.lessons.check.check_lesson` already (it goes stale); one in code quoted in
backticks or in a live value is not typed prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Lesson, LessonStep, Loop
from tracer.lessons.prose import PLACEHOLDER
from tracer.lessons.statements import source_lines
from tracer.lessons.views import quiz_at, step_as
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner

_TWO_DECIMALS = re.compile(r"(?<![\w.,])[-−]?\d+\.\d{2}(?![\w.]\d|\d|\w)")
_QUOTED_CODE = re.compile(r"`[^`\n]*`")
_ANY_NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_CAUGHT = (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError)


def typed_two_decimals(text: str) -> Iterator[tuple[int, str]]:
    """(offset, number) for each number with exactly two decimals written in ``text``, outside
    live values and code quoted in backticks."""
    masked = PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)
    masked = _QUOTED_CODE.sub(lambda m: " " * len(m.group()), masked)
    for match in _TWO_DECIMALS.finditer(masked):
        yield match.start(), match.group()


def unshown_numbers(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each two-decimal number typed into prose that no table, live value, quiz
    answer or shown formula of the lesson holds."""
    typed = [
        (where, step, number)
        for where, step, text in _prose(lesson)
        for _offset, number in typed_two_decimals(text)
    ]
    if not typed:
        return []  # nothing to look for: the lesson's tables are not gathered
    shown = _shown_values(lesson, runner)
    source = source_lines(lesson)
    found: list[Problem] = []
    seen: dict[tuple[int, str], int] = {}
    for where, step, number in typed:
        start = step.line if step is not None else 1
        nth = seen.get((start, number), 0)
        seen[(start, number)] = nth + 1
        value = float(number.replace("−", "-"))
        if _matches(value, shown):
            continue
        line, column = _locate(source, number, start, nth)
        found.append(
            Problem(
                line,
                column,
                f"warning: {number} in the {where} is in no table this lesson shows, nor a "
                "live value or a formula shown with a table; write it as a live value "
                "({{name}}), or show where it comes from",
                path,
            )
        )
    return found


def _prose(lesson: Lesson) -> Iterator[tuple[str, LessonStep | None, str]]:
    yield "summary", None, lesson.summary
    for step in lesson.steps:
        for text in step.prose():
            yield step.kind, step, text


def _matches(value: float, shown: list[float]) -> bool:
    tolerance = 0.005 + 1e-9
    return any(abs(value - v) <= tolerance or abs(abs(value) - abs(v)) <= tolerance for v in shown)


def _shown_values(lesson: Lesson, runner: LessonRunner) -> list[float]:
    """Every value the lesson shows: its tables' cells, loop sub-steps' tensors, live values,
    number answers, and the numbers of the formulas shown with its tables."""
    values: list[float] = []
    inputs = {id(lesson.options.inputs): lesson.options.inputs}
    for step in lesson.steps:
        for ref in step.tables():
            inputs.setdefault(id(ref.options.inputs), ref.options.inputs)
    for given in inputs.values():  # the embeddings a table of inputs shows
        if given is not None:
            values += _numbers(given.embeddings)
            values += _numbers(list((given.weights or {}).values()))
            source = getattr(given.source_sequence, "embeddings", None)
            values += _numbers(source)
    for named in lesson.values:
        try:
            values.append(runner.value(named.ref))
        except _CAUGHT:
            continue
    for number, step in enumerate(lesson.steps):
        quiz = quiz_at(lesson, number)
        if quiz is not None and quiz.quiz_kind == "number":
            try:
                answer = runner.answer(quiz)
            except _CAUGHT:
                pass
            else:
                if isinstance(answer, (int, float)):
                    values.append(float(answer))
        if step.kind == "loop":
            values += _loop_values(step_as(step, Loop), runner)
            continue
        for ref in step.tables():
            try:
                resolved = runner.tensor(ref)
            except _CAUGHT:
                continue
            values += _cells(resolved.tensor)
            stage = resolved.stage
            values += _formula_numbers(stage.formula, *stage.formulas.values())
    return values


def _loop_values(step: Loop, runner: LessonRunner) -> list[float]:
    values: list[float] = []
    try:
        for sub in runner.substeps(step):
            for tensor in sub.tensors.values():
                values += _cells(tensor)
            values += _formula_numbers(sub.formula)
    except _CAUGHT:
        pass
    return values


def _cells(tensor: torch.Tensor) -> list[float]:
    import torch

    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        return []
    flat = tensor.detach().flatten()[:100_000].double()
    return [float(v) for v in flat[torch.isfinite(flat)].tolist()]


def _numbers(nested: object) -> list[float]:
    """The numbers of a nested sequence of numbers (an input's matrix)."""
    if isinstance(nested, (int, float)) and not isinstance(nested, bool):
        return [float(nested)]
    if isinstance(nested, (list, tuple)):
        return [value for item in nested for value in _numbers(item)]
    return []


def _formula_numbers(*formulas: str | None) -> list[float]:
    found: list[float] = []
    for formula in formulas:
        for match in _ANY_NUMBER.finditer(formula or ""):
            try:
                found.append(float(match.group().replace("−", "-")))
            except ValueError:
                continue
    return found


def _locate(source: list[str], number: str, line: int, nth: int) -> tuple[int, int]:
    """Where the ``nth`` occurrence of ``number`` from line ``line`` on is written."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(number)}(?![\w.]\d|\d)")
    count = 0
    for index in range(max(line - 1, 0), len(source)):
        for match in pattern.finditer(source[index]):
            if count == nth:
                return index + 1, match.start() + 1
            count += 1
    return line, 1
