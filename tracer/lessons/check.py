"""Checking a loaded lesson by running it: what only a run can tell.

The loader checks names and structure without computing anything. This runs
every step the way ``attn lesson run`` would and reports, at the step's line
and column, tensors a stage does not have, focuses and cells out of range,
operations that do not fit a tensor's shape, and variants that fail::

    from tracer.lessons.check import check_lesson
    problems = check_lesson(lesson, host)      # [] when the lesson is sound
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.loader import one_line
from tracer.lessons.model import Compare, Focus, Lesson, Loop, Quiz, Show, TensorRef
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.runner import LessonRunner, Resolved
    from tracer.plugin_host import PluginHost


def check_lesson(lesson: Lesson, host: PluginHost) -> list[Problem]:
    """Every problem found by running each step of ``lesson``, in file order."""
    from tracer.lessons.runner import LessonRunner

    runner = LessonRunner(lesson, host)
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    problems: list[Problem] = []
    for step in lesson.steps:
        try:
            _check_step(step, runner)
        except (ArithmeticError, RuntimeError, ValueError, IndexError) as exc:
            # A safety net: whatever a step asks of torch, the author gets a line, not a traceback.
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())
            problems.append(
                Problem(step.line, step.column, f"this step cannot be computed: {detail}", path)
            )
        except TracerError as exc:
            line, column = step.line, step.column
            where = _where(step)
            if where is not None:
                line, column = where.line, where.column
            message = exc.message
            if exc.location is not None and not exc.location.path and exc.location.line:
                line, column = exc.location.line, exc.location.column or 1
            elif exc.location is not None and exc.location.path:
                message = f"{message} ({exc.location})"  # a plugin failed: say where in its file
            problems.append(Problem(line, column, message, path))
    return one_line(problems)


def _where(step: object) -> TensorRef | None:
    if isinstance(step, Show):
        return step.ref
    if isinstance(step, Quiz) and isinstance(step.answer, TensorRef):
        return step.answer
    return None


def _check_step(step: object, runner: LessonRunner) -> None:
    if isinstance(step, Show):
        resolved = runner.tensor(step.ref)
        if step.focus is not None:
            _check_focus(step.focus, resolved)
    elif isinstance(step, Loop):
        if next(iter(runner.substeps(step)), None) is None:
            raise _error(f"the '{step.stage}' loop of '{step.variant}' yielded no sub-steps")
    elif isinstance(step, Compare):
        for side in (step.left, step.right):
            try:
                runner.tensor(side)
            except TracerError as exc:
                raise _error(exc.message, side) from None
    elif isinstance(step, Quiz):
        runner.answer(step)


def _check_focus(focus: Focus, resolved: Resolved) -> None:
    tensor = resolved.tensor
    if tensor.dim() == 0:
        raise _error(f"'{resolved.name}' is a single value; there is nothing to focus on")
    rows = tensor.shape[0] if tensor.dim() >= 2 else 1
    columns = tensor.shape[-1]
    if focus.row is not None and tensor.dim() >= 2 and not focus.row < rows:
        raise _error(f"focus row {focus.row} is out of range: '{resolved.name}' has {rows} rows")
    one_row = tensor.dim() == 1 and focus.kind in ("row", "cell")
    if focus.row is not None and one_row and focus.row != resolved.query:
        raise _error(
            f"'{resolved.name}' has one row (one query); focus on a column or a token instead"
        )
    if focus.column is not None and not focus.column < columns:
        raise _error(
            f"focus column {focus.column} is out of range: '{resolved.name}' has {columns} columns"
        )


def _error(message: str, ref: TensorRef | None = None) -> TracerError:
    from tracer.errors import Location

    error = TracerError(message)
    if ref is not None:
        error.location = Location("", ref.line, ref.column)
    return error
