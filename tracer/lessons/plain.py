"""A whole lesson as plain text: what ``attn lesson run --plain`` prints.

For terminals without the TUI, pipes and screen readers: no colour, no box
drawing, no symbols standing in for words. Focus is said in words and the
focused values are printed again on their own lines; every quiz is followed
by its hints, its answer (computed live) and its explanation. Prose is printed
as written, with its live values filled in (:func:`tracer.lessons.prose.live_text`)::

    from tracer.lessons.plain import plain_lines
    for text in plain_lines(lesson, host):
        print(text)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from tracer.lessons.model import (
    Checkpoint,
    Compare,
    Focus,
    Lesson,
    LessonStep,
    Loop,
    Quiz,
    Show,
    TensorRef,
)
from tracer.lessons.walk import TABLE_WIDTH, step_as

if TYPE_CHECKING:
    import torch

    from tracer.lessons.runner import LessonRunner, Resolved
    from tracer.lessons.walk import StepView
    from tracer.plugin_host import PluginHost


def plain_lines(lesson: Lesson, host: PluginHost) -> Iterator[str]:
    """Yield the lesson's text one block at a time, computing each step as it is reached."""
    from tracer.lessons.runner import LessonRunner

    runner = LessonRunner(lesson, host)
    yield f"# {lesson.title}\n\n{lesson.summary.strip()}\n"
    yield f"Inputs: {' '.join(lesson.inputs.tokens)} ({lesson.inputs.name})\n"
    total = len(lesson.steps)
    for number, step in enumerate(lesson.steps, start=1):
        yield f"--- Step {number} of {total}: {_heading(step)}"
        yield "\n".join(_step_lines(step, runner, number - 1)) + "\n"
    runner.close()  # a plugin's worker processes stop now, not when collected
    yield "--- End of the lesson."


def _heading(step: LessonStep) -> str:
    return _HEADINGS[step.kind](step)


def _show_heading(step: LessonStep) -> str:
    ref = step_as(step, Show).ref
    return f"{ref.variant}, stage {ref.stage}{_query_words(ref)}"


def _loop_heading(step: LessonStep) -> str:
    loop = step_as(step, Loop)
    return f"the {loop.stage} loop of {loop.variant}, step by step"


_HEADINGS: dict[str, Callable[[LessonStep], str]] = {
    "narration": lambda step: "narration",
    "show": _show_heading,
    "loop": _loop_heading,
    "compare": lambda step: "compare",
    "quiz": lambda step: "quiz",
    "checkpoint": lambda step: step_as(step, Checkpoint).title,
}
"""Each step kind's heading in ``--plain``."""


def _query_words(ref: TensorRef) -> str:
    if ref.query is None or ref.options.inputs is None:
        return ""
    return f", query {ref.query} ({ref.options.inputs.tokens[ref.query]})"


def _step_lines(step: LessonStep, runner: LessonRunner, number: int) -> list[str]:
    from tracer.lessons.walk import step_view

    return _DRAW[step.kind](step_view(runner.lesson, runner, number), runner)


def _table(resolved: Resolved, *, formula: bool = True) -> list[str]:
    from tracer.render.text import format_tensor, shape_text

    lines = [f"{resolved.name} ({shape_text(resolved.tensor, resolved.axes, resolved.query)})"]
    if formula and resolved.stage.formula:
        lines.append(f"formula: {resolved.stage.formula}")
    lines.append(
        format_tensor(
            resolved.tensor, resolved.tokens, resolved.query, resolved.axes, wrap=TABLE_WIDTH
        )
    )
    return lines


def _narration(view: StepView, runner: LessonRunner) -> list[str]:
    return [view.text.rstrip()]


def _checkpoint(view: StepView, runner: LessonRunner) -> list[str]:
    return [f"- {point.strip()}" for point in view.points]


def _show(view: StepView, runner: LessonRunner) -> list[str]:
    main, *others = view.tables
    resolved = main.resolved
    lines = [view.text.strip()] if view.text else []
    lines.append(f"{resolved.stage.title}")
    lines.extend(_table(resolved))
    if main.focus is not None:
        lines.extend(focus_lines(main.focus, resolved))
    for other in others:
        lines.append("")
        lines.extend(_table(other.resolved, formula=False))
    return lines


def focus_lines(focus: Focus, resolved: Resolved) -> list[str]:
    from tracer.render.labels import axis_labels
    from tracer.render.text import format_number

    tensor = resolved.tensor
    labels = axis_labels(tuple(tensor.shape), resolved.tokens, resolved.query, resolved.axes)
    table = tensor.reshape(len(labels.rows), len(labels.columns))
    one_row = tensor.dim() < 2

    def row_of(index: int | None) -> int:
        return 0 if one_row or index is None else index

    def listing(values: torch.Tensor, names: tuple[str, ...]) -> str:
        return ", ".join(
            f"{n} {format_number(float(v))}" for n, v in zip(names, values, strict=True)
        )

    if focus.kind == "cell":
        row, column = row_of(focus.row), focus.column or 0
        name = f"{labels.rows[row]} and {labels.columns[column]}"
        return [f"Focus: the cell for {name}: {format_number(float(table[row, column]))}"]
    lines = []
    if focus.kind in ("row", "token") and focus.row is not None:
        row = row_of(focus.row)
        lines.append(f"Focus: row {labels.rows[row]}: {listing(table[row], labels.columns)}")
    if focus.kind in ("column", "token") and focus.column is not None:
        column = focus.column
        lines.append(
            f"Focus: column {labels.columns[column]}: {listing(table[:, column], labels.rows)}"
        )
    return lines


def loop_lines(step: Loop, runner: LessonRunner) -> list[str]:
    from tracer.render.text import format_number, format_tensor, shape_text

    lines = [runner.text(step.caption).strip()] if step.caption else []
    count = 0
    for sub in runner.substeps(step):
        count += 1
        where = ", ".join(str(i) for i in sub.position)
        lines.append(f"sub-step {sub.index + 1} at ({where}): {sub.formula or ''}".rstrip())
        for name, tensor in sub.tensors.items():
            if tensor.dim() == 0:
                lines.append(f"  {name} = {format_number(float(tensor))}")
                continue
            # A row or a table keeps its shape and its labels, as in the app.
            axes = sub.axes.get(name)
            lines.append(f"  {name} ({shape_text(tensor, axes, step.query)}):")
            table = format_tensor(tensor, runner.tokens, step.query, axes, wrap=TABLE_WIDTH - 4)
            lines.extend(f"    {line}".rstrip() for line in table.split("\n"))
    lines.append(f"({count} sub-step{'s' if count != 1 else ''} shown)")
    return lines


def _loop(view: StepView, runner: LessonRunner) -> list[str]:
    return loop_lines(step_as(view.step, Loop), runner)


def _compare(view: StepView, runner: LessonRunner) -> list[str]:
    from tracer.render.text import format_number, format_tensor, shape_text

    left, right, difference = runner.compare(step_as(view.step, Compare))
    caption = view.text
    lines = [caption.strip()] if caption else []
    for side, resolved in (("Left", left), ("Right", right)):
        label = resolved.ref.label or f"{resolved.ref.variant}"
        lines.append(f"{side}: {label} ({resolved.ref.variant}, stage {resolved.ref.stage})")
        lines.extend(_table(resolved))
        lines.append("")
    if difference is None:
        lines.append(
            f"The shapes differ ({shape_text(left.tensor)} and {shape_text(right.tensor)}), "
            "so there is no element-wise difference."
        )
        return lines
    largest = float(difference.abs().max()) if difference.numel() else 0.0
    lines.append(f"Difference, right minus left (largest size {format_number(largest)})")
    lines.append(format_tensor(difference, left.tokens, left.query, left.axes, wrap=TABLE_WIDTH))
    return lines


def _quiz(step_view: StepView, runner: LessonRunner) -> list[str]:
    from tracer.render.text import format_tensor, shape_text

    step = step_as(step_view.step, Quiz)
    lines = [f"Quiz: {runner.text(step.question).strip()}"]
    view = step_view.quiz
    assert view is not None  # the walk gives every quiz its tables
    if view.caption:
        lines.append(view.caption)
    for table in view.tables:
        shown = table.resolved
        if table.role == "cells":
            lines.append(f"Select cells of {shown.name}:")
        else:
            lines.append(f"{shown.name} ({shape_text(shown.tensor, shown.axes, shown.query)})")
        lines.append(
            format_tensor(
                shown.tensor, shown.tokens, shown.query, shown.axes, table.hidden, TABLE_WIDTH
            )
        )
    if view.hidden:
        lines.append("(? = a cell that shows the answer, printed below)")
    lines.extend(
        f"  {chr(ord('a') + i)}) {runner.text(choice)}" for i, choice in enumerate(step.choices)
    )
    if step.quiz_kind == "multiple":
        lines.append("(more than one choice may be right)")
    for number, hint in enumerate(step.hints, start=1):
        lines.append(f"Hint {number}: {runner.text(hint, step).strip()}")
    answer = runner.answer(step)
    shown_answer = runner.answer_text(step)
    if step.quiz_kind == "choice":
        assert isinstance(answer, int)
        lines.append(f"Answer: {chr(ord('a') + answer)}) {shown_answer}")
    elif step.quiz_kind == "multiple":
        assert isinstance(answer, tuple)
        letters = ", ".join(f"{chr(ord('a') + i)})" for i in answer)
        lines.append(f"Answer: {letters} {shown_answer}")
    elif step.quiz_kind == "cells":
        lines.append(f"Answer: {shown_answer}")
    else:
        if step.relative:
            tolerance = f" (answers within {step.tolerance * 100:g}% of it count as right)"
        elif step.tolerance:
            tolerance = f" (answers within {step.tolerance:g} count as right)"
        else:
            tolerance = ""
        lines.append(f"Answer: {shown_answer}{tolerance}")
    if step.explanation:
        lines.append(f"Why: {runner.text(step.explanation, step).strip()}")
    return lines


_DRAW: dict[str, Callable[[StepView, LessonRunner], list[str]]] = {
    "narration": _narration,
    "show": _show,
    "loop": _loop,
    "compare": _compare,
    "quiz": _quiz,
    "checkpoint": _checkpoint,
}
"""How ``--plain`` draws each kind of step's view (what the view holds is the walk's)."""
