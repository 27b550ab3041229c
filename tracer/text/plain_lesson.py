"""A whole lesson as plain text: what ``attn lesson run --plain`` prints.

For terminals without the TUI, pipes and screen readers: no colour, no box
drawing, no symbols standing in for words. Focus is said in words and the
focused values are printed again on their own lines; every quiz is followed
by its hints, its answer (computed live) and its explanation. Prose is printed
as written, with its live values filled in (:func:`tracer.lessons.prose.live_text`)::

    from tracer.text.plain_lesson import plain_lines
    for text in plain_lines(lesson, host):
        print(text)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.hiding import HIDDEN_NOTE, Table, hidden_legend
from tracer.lessons.model import Focus, Lesson, LessonStep, Loop, Quiz, TensorRef
from tracer.lessons.views import (
    TABLE_WIDTH,
    answer_shown,
    lesson_intro,
    loop_substeps,
    step_as,
    step_heading,
    step_view,
)
from tracer.render.labels import axis_labels, label_axes, loop_matrix_axes, position_tokens
from tracer.render.text import format_number, format_scalar, format_tensor, is_whole, shape_text
from tracer.variant import source_tokens

if TYPE_CHECKING:
    from tracer.lessons.hiding import SubStepView
    from tracer.lessons.views import StepView
    from tracer.plugin_host import PluginHost
    from tracer.session.lesson import LessonRun, Resolved
    from tracer.variant import SubStep


def plain_lines(
    lesson: Lesson, host: PluginHost, *, runner: LessonRun | None = None
) -> Iterator[str]:
    """Yield the lesson's text one block at a time, computing each step as it is reached.

    ``runner``: the session's (left open: its runs are reused), else one of its own.
    """
    from tracer.session.lesson import lesson_run

    own = runner is None
    runner = runner if runner is not None else lesson_run(lesson, host)
    yield lesson_heading(lesson, lesson_intro(lesson, runner))
    total = len(lesson.steps)
    for number, step in enumerate(lesson.steps, start=1):
        yield step_title(number - 1, total, step)
        yield "\n".join(_step_lines(step, runner, number - 1)) + "\n"
    if own:
        runner.close()  # a plugin's worker processes stop now, not when collected
    yield "--- End of the lesson."


def lesson_heading(lesson: Lesson, summary: str | None = None) -> str:
    """The lesson's title, summary and inputs, as ``--plain`` starts (``summary``: the
    summary as shown, with no unanswered quiz's answer in it; the author's if None)."""
    summary = lesson.summary if summary is None else summary
    return (
        f"# {lesson.title}\n\n{summary.strip()}\n\n"
        f"Inputs: {' '.join(lesson.inputs.tokens)} ({lesson.inputs.name})\n"
    )


def step_title(number: int, total: int, step: LessonStep) -> str:
    """The line before step ``number`` (from 0): ``--- Step 3 of 12: ...``."""
    return f"--- Step {number + 1} of {total}: {step_heading(step)}"


def _step_lines(step: LessonStep, runner: LessonRun, number: int) -> list[str]:
    view = step_view(runner.lesson, runner, number)
    whole = _WHOLE.get(view.kind)
    return whole(view, runner) if whole is not None else view_lines(view)


def view_lines(view: StepView) -> list[str]:
    """A step's view as text: the same for ``--plain`` and ``--plain --interactive``.

    A loop step gives its caption only (its sub-steps: :func:`substep_lines`); a quiz
    its question, tables and choices, never its answer (:func:`quiz_lines`).
    """
    return _DRAW[view.kind](view)


def table_lines(table: Table, *, title: bool = False, formula: bool = True) -> list[str]:
    """One table: its title (with ``title``), name and shape, formula, then its values."""
    resolved = table.resolved
    lines = [table.title] if title else []
    lines.append(f"{table.name} ({shape_text(resolved.tensor, resolved.axes, resolved.query)})")
    if formula and table.formula:
        lines.append(f"formula: {table.formula}")
    lines.append(
        format_tensor(
            resolved.tensor,
            resolved.tokens,
            resolved.query,
            resolved.axes,
            table.hidden,
            wrap=TABLE_WIDTH,
        )
    )
    if table.hidden:
        lines.append(hidden_legend([table]))
    return lines


ROW_LIMIT = 64
"""The most rows :func:`row_lines` reads of one table (then it says how many it left)."""
COLUMN_LIMIT = 32
"""The most cells of one row :func:`row_lines` reads."""


def row_lines(table: Table) -> list[str]:
    """A table read row by row, each cell with its row's and its column's label, as a screen
    reader says it: ``journey, with: 0.8434``; a hidden cell reads "?". A table of more than
    two dimensions is read slice by slice, each named by its leading indices."""
    resolved = table.resolved
    tensor = resolved.tensor
    shape = tuple(tensor.shape)
    labels = axis_labels(shape, resolved.tokens, resolved.query, resolved.axes)
    rows, columns = len(labels.rows), len(labels.columns)
    named = label_axes(shape, resolved.axes, resolved.tokens, resolved.query)

    def spoken(axis: int, label: str) -> str:  # "feature 2", not a bare "2"; a token as it is
        kind = named[axis] if -len(named) <= axis < len(named) else None
        if kind is None or kind.tokens or not kind.name or not label:
            return label
        return f"{kind.name} {label}"

    row_names = [spoken(-2, label) if tensor.dim() >= 2 else label for label in labels.rows]
    column_names = [spoken(-1, label) for label in labels.columns]
    whole = is_whole(tensor)
    lines = [f"{resolved.name}, row by row ({shape_text(tensor, resolved.axes, resolved.query)}):"]
    if tensor.numel() == 0:
        return [*lines, "(no values)"]
    flat = tensor.reshape(-1, rows, columns)
    leading = shape[:-2] if tensor.dim() > 2 else ()
    said = 0
    for block in range(flat.shape[0]):
        if tensor.dim() > 2:
            where, rest = [], block
            for size in reversed(leading):
                where.append(rest % size)
                rest //= size
            lines.append(f"slice [{', '.join(str(i) for i in reversed(where))}]:")
        for row in range(rows):
            if said == ROW_LIMIT:
                left = flat.shape[0] * rows - said
                lines.append(f"({left:,} more rows not read; 'attn trace' prints them all)")
                return lines
            said += 1
            cells = []
            for column in range(min(columns, COLUMN_LIMIT)):
                # Hidden cells are (row, column) of the tensor folded to two dimensions.
                hidden = (block * rows + row, column) in table.hidden
                value = "?" if hidden else format_number(float(flat[block, row, column]), whole)
                name = ", ".join(label for label in (row_names[row], column_names[column]) if label)
                cells.append(f"{name}: {value}" if name else value)
            more = f"; and {columns - COLUMN_LIMIT:,} more" if columns > COLUMN_LIMIT else ""
            lines.append("; ".join(cells) + more)
    return lines


def _narration(view: StepView) -> list[str]:
    return [view.text.rstrip()]


def _checkpoint(view: StepView) -> list[str]:
    return [f"- {point.strip()}" for point in view.points]


def _show(view: StepView) -> list[str]:
    main, *others = view.tables
    lines = [view.text.strip()] if view.text else []
    lines.extend(table_lines(main, title=True))
    if main.focus is not None:
        lines.extend(focus_lines(main.focus, main.resolved, main.hidden))
    for other in others:
        lines.append("")
        lines.extend(table_lines(other, formula=False))
    return lines


def _loop(view: StepView) -> list[str]:
    return [view.text.strip()] if view.text else []


def focus_lines(
    focus: Focus, resolved: Resolved, hidden: frozenset[tuple[int, int]] = frozenset()
) -> list[str]:
    """The focused cell, row or column said again in words; ``hidden`` cells (the walk's:
    an unanswered quiz's answer) read "?" here as in the table."""
    tensor = resolved.tensor
    labels = axis_labels(tuple(tensor.shape), resolved.tokens, resolved.query, resolved.axes)
    table = tensor.reshape(len(labels.rows), len(labels.columns))
    one_row = tensor.dim() < 2
    whole = is_whole(tensor)  # printed as its table prints it

    def row_of(index: int | None) -> int:
        return 0 if one_row or index is None else index

    def number(row: int, column: int) -> str:
        if (row, column) in hidden:
            return "?"
        return format_number(float(table[row, column]), whole)

    def listing(cells: list[tuple[int, int]], names: tuple[str, ...]) -> str:
        return ", ".join(f"{n} {number(*cell)}" for n, cell in zip(names, cells, strict=True))

    if focus.kind == "cell":
        row, column = row_of(focus.row), focus.column or 0
        name = f"{labels.rows[row]} and {labels.columns[column]}"
        return [f"Focus: the cell for {name}: {number(row, column)}"]
    lines = []
    if focus.kind in ("row", "token") and focus.row is not None:
        row = row_of(focus.row)
        cells = [(row, column) for column in range(len(labels.columns))]
        lines.append(f"Focus: row {labels.rows[row]}: {listing(cells, labels.columns)}")
    if focus.kind in ("column", "token") and focus.column is not None:
        column = focus.column
        cells = [(row, column) for row in range(len(labels.rows))]
        lines.append(f"Focus: column {labels.columns[column]}: {listing(cells, labels.rows)}")
    return lines


def loop_lines(view: StepView, runner: LessonRun) -> list[str]:
    """A loop step in full: its caption, then every sub-step it shows, and how many.

    Read top to bottom as the rest of ``--plain``: a quiz after the loop keeps its answer
    off every sub-step (the views' :func:`~tracer.lessons.views.loop_substeps`).
    """
    step = step_as(view.step, Loop)
    lines = [view.text.strip()] if view.text else []
    # The run's tokens, as the app and 'attn trace --substeps' label them: they carry a
    # second sequence's (a source's keys are labelled with the source's tokens).
    tokens = runner.trace(step.variant, step.options, step.query).tokens
    axes = _loop_axes(step, runner)
    count, count_shown, concealed = 0, True, False
    for said in loop_substeps(runner.lesson, runner, view.number):
        count += 1
        count_shown = said.count_shown
        concealed = concealed or said.concealed_in_text
        lines.extend(substep_lines(said.sub, tokens, step.query, said, axes))
    if count_shown:
        lines.append(f"({count} sub-step{'s' if count != 1 else ''} shown)")
    if concealed:
        lines.append(HIDDEN_NOTE)
    return lines


def _loop_axes(step: Loop, runner: LessonRun) -> tuple[str, ...] | None:
    """The axes of the matrix ``step``'s loop fills: those of the stage it builds (None if the
    run cannot say: then its positions are given by index alone)."""
    built = TensorRef(step.variant, step.stage, query=step.query, options=step.options)
    try:
        resolved = runner.tensor(built)
    except TracerError:
        return None
    return loop_matrix_axes(resolved.axes)


def substep_lines(
    sub: SubStep,
    tokens: tuple[str, ...],
    query: int | None,
    said: SubStepView | None = None,
    axes: tuple[str, ...] | None = None,
) -> list[str]:
    """One sub-step of a loop: where it is, its formula, and the values it computed.

    ``said``: what of it may be shown (the walk's): its hidden cells read "?". ``axes``: the
    loop's matrix axes; the tokens its position names are said with it ("at (1, 3): query
    journey, key with"), a source's token as the source's.
    """
    where = ", ".join(str(i) for i in sub.position)
    names = position_tokens(sub.position, axes, tokens, sub)
    source = source_tokens(tokens)
    parts = []
    kinds = axes if axes is not None and len(axes) == len(names) else ("",) * len(names)
    for name, axis in zip(names, kinds, strict=True):
        kind = axis.partition(":")[0]
        if name:
            mark = " of the source" if source is not None and kind in ("source", "key") else ""
            parts.append(f"{kind} {name}{mark}")
    if parts:
        where += "; " + ", ".join(parts)
    formula = said.formula if said is not None else (sub.formula or "")
    ordinal = f"sub-step {sub.index + 1}" if said is None or said.count_shown else "sub-step"
    lines = [f"{ordinal} at ({where}): {formula}".rstrip()]
    for name, tensor in sub.tensors.items():
        hidden = said.hidden.get(name, frozenset()) if said is not None else frozenset()
        if tensor.dim() == 0:
            value = "?" if hidden else format_scalar(float(tensor))
            lines.append(f"  {name} = {value}")
            continue
        # A row or a table keeps its shape and its labels, as in the app.
        axes = sub.axes.get(name)
        lines.append(f"  {name} ({shape_text(tensor, axes, query)}):")
        table = format_tensor(tensor, tokens, query, axes, hidden, wrap=TABLE_WIDTH - 4)
        lines.extend(f"    {line}".rstrip() for line in table.split("\n"))
    return lines


def _compare(view: StepView) -> list[str]:
    left, right = view.tables
    lines = [view.text.strip()] if view.text else []
    # "On the left", never "Left:"/"Right:" at a line's start: "Right: route 2" is heard as
    # a verdict by a screen reader's user.
    for side, table in (("On the left", left), ("On the right", right)):
        ref = table.resolved.ref
        label = table.label or ref.variant
        lines.append(f"{side}: {label} ({ref.variant}, stage {ref.stage})")
        lines.extend(table_lines(table))
        lines.append("")
    difference = view.difference
    if difference is None:
        lines.append(
            f"The shapes differ ({shape_text(left.resolved.tensor)} and "
            f"{shape_text(right.resolved.tensor)}), so there is no element-wise difference."
        )
        return lines
    shown = left.resolved
    hidden = view.difference_hidden
    lines.append(f"The difference, the right one minus the left (largest size {view.largest})")
    lines.append(
        format_tensor(difference, shown.tokens, shown.query, shown.axes, hidden, TABLE_WIDTH)
    )
    if hidden:
        lines.append(hidden_legend(view.tables) or HIDDEN_NOTE)
    return lines


def quiz_lines(
    step_view: StepView, choices: tuple[str, ...] | None = None, *, until: str = "it is answered"
) -> list[str]:
    """A quiz as asked: the question, its tables (answer cells as ?) and its choices."""
    step = step_as(step_view.step, Quiz)
    lines = [f"Quiz: {step_view.text.strip()}"]
    view = step_view.quiz
    assert view is not None  # the walk gives every quiz its tables
    if view.caption:
        lines.append(view.caption)
    lines.extend(quiz_table_lines(step_view))
    if any(table.hidden for table in step_view.tables):
        lines.append(
            f"(? = a number that would give the answer away, shown once {until})"
            if view.own
            else hidden_legend(step_view.tables)
        )
    written = choices if choices is not None else step_view.choices
    lines.extend(f"  {chr(ord('a') + i)}) {choice}" for i, choice in enumerate(written))
    if step.quiz_kind == "multiple":
        lines.append("(more than one choice may be right)")
    return lines


def quiz_table_lines(step_view: StepView) -> list[str]:
    """A quiz's tables, each under its name (never the stage's title, which may state the
    answer), the cells the view hides as ?."""
    lines = []
    for table in step_view.tables:
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
    return lines


def answer_lines(step_view: StepView, runner: LessonRun) -> list[str]:
    """What ``--plain`` (not interactive) prints after a quiz: hints, answer, explanation."""
    step = step_as(step_view.step, Quiz)
    # The view's hints: what the walk lets them say (no other unanswered quiz's answer).
    lines = [
        f"Hint {number}: {hint.strip()}" for number, hint in enumerate(step_view.hints, start=1)
    ]
    lines.append(f"Answer: {answer_shown(step, runner)}")
    if step.explanation:
        lines.append(f"Why: {runner.text(step.explanation, step).strip()}")
    return lines


_WHOLE: dict[str, Callable[[StepView, LessonRun], list[str]]] = {
    "loop": loop_lines,
    "quiz": lambda view, runner: (
        quiz_lines(view, until="the answer is printed below") + answer_lines(view, runner)
    ),
}
"""Kinds ``--plain`` prints whole at once: every sub-step of a loop, a quiz with its answer."""

_DRAW: dict[str, Callable[[StepView], list[str]]] = {
    "narration": _narration,
    "show": _show,
    "loop": _loop,
    "compare": _compare,
    "checkpoint": _checkpoint,
    "quiz": quiz_lines,
}
"""How ``--plain`` draws each kind of step's view (what the view holds is the walk's)."""
