"""A lesson as a document: Markdown, or a Jupyter notebook (nbformat 4).

``attn lesson export NAME|PATH --to md|ipynb [-o FILE] [--force]``. Every step
is computed live, as in ``--plain``: the narration (with its live values), for
each stage shown the lines of the variant's code that ran to compute it, and
the tensors themselves as text (in a notebook, as the code cell's output).
Quizzes keep their answer and explanation out of sight (a ``<details>``
block) until the reader opens them.

Narration is plain text, so Markdown never reinterprets it: characters
Markdown would read as markup are escaped and line breaks are kept, so the
document shows what the author wrote. This module imports torch (through the
runner).
"""

from __future__ import annotations

import linecache
import os
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.inputs.input_set import InputSet, input_data
from tracer.lessons.hiding import HIDDEN_NOTE, Table, hidden_legend
from tracer.lessons.model import (
    Lesson,
    LessonStep,
    Quiz,
)
from tracer.lessons.views import (
    TABLE_WIDTH,
    answer_shown,
    lesson_intro,
    step_as,
    step_heading,
    step_view,
)
from tracer.render.text import format_tensor, shape_text
from tracer.text.plain_lesson import focus_lines, loop_lines

if TYPE_CHECKING:
    from tracer.lessons.views import StepView
    from tracer.plugin_host import PluginHost
    from tracer.session.lesson import LessonRun, Resolved
    from tracer.variant import Stage

FORMATS = ("md", "ipynb")
_MARKUP = re.compile(r"([\\`*_\[\]<>|~])")
"""Characters that are Markdown markup anywhere in a line."""
_LINE_START = re.compile(r"^(\s*)([-+=#>]|\d+[.)])")
"""What is markup only at the start of a line: lists, headings, quotes, rules."""


@dataclass(frozen=True)
class Block:
    """One piece of the document: prose (already Markdown), code that ran, or an output."""

    kind: str
    """``markdown``; ``source`` (a variant's lines that ran, to read; ``output``: its files);
    ``code`` (a cell that runs, with the ``output`` it prints); ``output`` (text alone)."""
    text: str
    output: str = ""


def escape(text: str) -> str:
    """Plain text as Markdown that shows exactly that text.

    Lines indented by four spaces stay a code block (as in the narration, where
    they are code); every other line has Markdown's markup characters escaped
    and ends with a hard line break, so nothing is reformatted or lost.
    """
    out: list[str] = []
    lines = text.rstrip("\n").split("\n")
    for number, line in enumerate(lines):
        if line.startswith("    ") or not line.strip():
            out.append(line)
            continue
        escaped = _MARKUP.sub(r"\\\1", line)
        escaped = _LINE_START.sub(_escape_start, escaped)
        following = lines[number + 1] if number + 1 < len(lines) else ""
        hard_break = following.strip() and not following.startswith("    ")
        out.append(escaped + ("\\" if hard_break else ""))
    return "\n".join(out)


def _escape_start(match: re.Match[str]) -> str:
    indent, mark = match.group(1), match.group(2)
    return f"{indent}{mark[:-1]}\\{mark[-1]}"


def code_that_ran(stage: Stage) -> str:
    """The lines of the variant's file that ran for ``stage``, in file order, dedented."""
    files = dict(stage.files) or (
        {stage.source_file: stage.lines} if stage.source_file is not None else {}
    )
    chunks = []
    for path, numbers in files.items():
        lines: list[str] = []
        previous = None
        for number in sorted(numbers):
            line = linecache.getline(path, number).rstrip("\n")
            if previous is not None and number > previous + 1:
                indent = line[: len(line) - len(line.lstrip())]
                lines.append(f"{indent}# ...")  # lines that did not run
            lines.append(line)
            previous = number
        if any(lines):
            chunks.append(textwrap.dedent("\n".join(lines)))
    return "\n\n".join(chunks)


@dataclass(frozen=True)
class Exporting:
    """What drawing a step needs: the lesson's runner, and the folder the document is
    written to (inputs files are named relative to it, so the document travels)."""

    runner: LessonRun
    folder: Path


def blocks(
    lesson: Lesson,
    host: PluginHost,
    *,
    runner: LessonRun | None = None,
    folder: Path | None = None,
) -> Iterator[Block]:
    """The lesson, step by step, computed live.

    ``runner``: the session's (left open), else one of its own. ``folder``: where the
    document will be (default: the current folder); code cells name inputs files by
    their path from there, never by this machine's absolute path.
    """
    from tracer.session.lesson import lesson_run

    own = runner is None
    runner = runner if runner is not None else lesson_run(lesson, host)
    context = Exporting(runner, (folder or Path.cwd()).absolute())
    inputs = f"Inputs: {' '.join(lesson.inputs.tokens)} ({lesson.inputs.name})"
    yield Block(
        "markdown",
        f"# {escape(lesson.title)}\n\n{escape(lesson_intro(lesson, runner))}\n\n"
        f"{escape(inputs)}\n\n"
        f"{escape(NOTE)}",
    )
    yield Block("code", _setup(lesson), "")
    total = len(lesson.steps)
    for number, step in enumerate(lesson.steps, start=1):
        yield Block("markdown", f"## Step {number} of {total}: {_heading(step)}")
        yield from _step(step, context, number - 1)
    if own:
        runner.close()  # a plugin's worker processes stop now, not when collected


def _heading(step: LessonStep) -> str:
    return escape(step_heading(step))  # the walk's heading, as --plain prints it


def _step(step: LessonStep, context: Exporting, number: int) -> Iterator[Block]:
    runner = context.runner
    yield from _DRAW[step.kind](step_view(runner.lesson, runner, number), context)


def _narration(view: StepView, context: Exporting) -> Iterator[Block]:
    yield Block("markdown", escape(view.text))


def _checkpoint(view: StepView, context: Exporting) -> Iterator[Block]:
    yield Block("markdown", "\n".join(f"- {escape(point)}" for point in view.points))


def _show(view: StepView, context: Exporting) -> Iterator[Block]:
    if view.text:
        yield Block("markdown", escape(view.text))
    main, *others = view.tables
    focus = focus_lines(main.focus, main.resolved, main.hidden) if main.focus is not None else []
    yield from _tensor_block(main, "\n".join(focus), context=context)
    for other in others:
        yield from _tensor_block(other, "", code=False, context=context)


def _loop(view: StepView, context: Exporting) -> Iterator[Block]:
    yield Block("output", "\n".join(loop_lines(view, context.runner)))


def _compare(view: StepView, context: Exporting) -> Iterator[Block]:
    caption = view.text
    if caption:
        yield Block("markdown", escape(caption))
    left, right = view.tables
    difference = view.difference
    for side, table in (("Left", left), ("Right", right)):
        label = table.label or table.resolved.ref.variant
        yield Block("markdown", escape(f"{side}: {label}"))
        yield from _tensor_block(table, "", context=context)
    shown = left.resolved
    if difference is not None:
        hidden = view.difference_hidden
        yield Block(
            "markdown", escape(f"Difference, right minus left (largest size {view.largest})")
        )
        drawn = format_tensor(
            difference, shown.tokens, shown.query, shown.axes, hidden, TABLE_WIDTH
        )
        note = hidden_legend(view.tables) or HIDDEN_NOTE
        yield Block("output", "\n".join([drawn, note] if hidden else [drawn]))


def _tensor_block(
    shown: Table,
    extra: str,
    *,
    code: bool = True,
    context: Exporting | None = None,
) -> Iterator[Block]:
    """A tensor: the variant's lines that ran (to read), then the table, recomputed by a
    runnable cell where the run can be written as one ``trace(...)`` call."""
    resolved, hidden = shown.resolved, shown.hidden
    source = code_that_ran(resolved.stage) if code else ""
    if source:
        yield Block("source", source, _file_names(resolved.stage))
    heading = [f"{resolved.name} ({shape_text(resolved.tensor, resolved.axes, resolved.query)})"]
    if shown.formula:
        heading.append(f"formula: {shown.formula}")
    table = format_tensor(
        resolved.tensor, resolved.tokens, resolved.query, resolved.axes, hidden, TABLE_WIDTH
    )
    if hidden and code:  # a quiz's own tables (code=False) say it under the quiz
        extra = "\n".join(line for line in (extra, hidden_legend([shown])) if line)
    program = _program(resolved, context) if context is not None and not hidden else None
    if program is None:
        yield Block("output", "\n".join([*heading, table, *([extra] if extra else [])]))
        return
    yield Block("output", "\n".join(heading))
    yield Block("code", program, table)
    if extra:
        yield Block("output", extra)


def _file_names(stage: Stage) -> str:
    files = dict(stage.files) or ({stage.source_file: ()} if stage.source_file else {})
    return ", ".join(Path(path).name for path in files)


def _inputs_spec(resolved: Resolved, folder: Path, lesson_inputs: InputSet) -> str | None:
    """How ``trace(inputs=...)`` names the run's inputs, as Python: a built-in name, an
    inputs file (its path from ``folder``, where the document is: the folder travels with
    the inputs in it, and no absolute path of this machine is written), or the lesson's
    own ``inputs:`` written out as data (:data:`INPUTS_NAME` for the lesson's own)."""
    inputs = resolved.ref.options.inputs
    if inputs is None:
        return None
    if inputs.source == "built-in":
        return repr(inputs.name)
    if inputs.name == "inline":
        # Inputs written inside the lesson: the file is a lesson, not an inputs file, so the
        # notebook carries the values themselves, as data (the setup cell names the lesson's).
        return INPUTS_NAME if inputs == lesson_inputs else _literal(input_data(inputs))
    path = Path(inputs.source)
    if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
        try:
            relative = os.path.relpath(path.resolve(), folder.resolve())
        except ValueError:  # another drive (Windows): no path leads there, so it is embedded
            return _literal(input_data(inputs))
        return repr(Path(relative).as_posix())
    return None


def _program(resolved: Resolved, context: Exporting) -> str | None:
    """A cell that recomputes ``resolved`` with ``tracer.trace`` and prints the table the
    lesson shows; None when the tensor is the lesson's own derivation (``then:``)."""
    runner = context.runner
    ref = resolved.ref
    spec = _inputs_spec(resolved, context.folder, runner.lesson.inputs)
    if ref.then or spec is None:
        return None
    options = ref.options
    inputs = options.inputs
    assert inputs is not None
    arguments = [repr(ref.variant), f"inputs={spec}"]
    arguments.append(f"seed={options.seed if options.seed is not None else 123!r}")
    arguments.append(f"init={options.init or 'rand'!r}")
    if options.d_out is not None and inputs.d_out is None:
        arguments.append(f"d_out={options.d_out!r}")
    if options.dropout:
        arguments.append(f"dropout={options.dropout!r}")
    if ref.query is not None:
        arguments.append(f"query={ref.query!r}")
    arguments.extend(
        f"{name}={value!r}"
        for name, value in runner.variant_options(ref.variant, options).items()
        if name.isidentifier() and name not in TRACE_ARGUMENTS
    )
    if any(not n.isidentifier() for n in runner.variant_options(ref.variant, options)):
        return None
    name = ref.tensor or next(iter(resolved.stage.tensors))
    return (
        f"run = trace({', '.join(arguments)})\n"
        f"stage = run.stage({ref.stage!r})\n"
        f"print(format_tensor(stage.tensors[{name!r}], run.tokens, {ref.query!r}, "
        f"stage.axes.get({name!r}), wrap={TABLE_WIDTH}))"
    )


TRACE_ARGUMENTS = frozenset({"inputs", "seed", "init", "d_out", "dropout", "query", "plugin_dirs"})
SETUP = "from tracer import trace\nfrom tracer.render.text import format_tensor"
"""The notebook's first code cell: what the cells that recompute a table need (and the
lesson's own inputs, when it writes them out: :func:`_setup`)."""
INPUTS_NAME = "LESSON_INPUTS"
"""The name the setup cell gives a lesson's own ``inputs:`` section, written out as data."""


def _setup(lesson: Lesson) -> str:
    if lesson.inputs.name != "inline":
        return SETUP
    return (
        f"{SETUP}\n\n# The lesson's own inputs (its inputs: section), as an inputs file writes "
        f"them.\n{INPUTS_NAME} = {_literal(input_data(lesson.inputs))}"
    )


def _literal(value: object, indent: int = 0) -> str:
    """``value`` (plain data) as a Python literal to read: a mapping one key a line, a table
    one row a line."""
    inner = " " * (indent + 4)
    if isinstance(value, dict):
        items = [f"{inner}{key!r}: {_literal(item, indent + 4)}," for key, item in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and value and all(isinstance(row, list) for row in value):
        rows = [f"{inner}{_literal(row, indent + 4)}," for row in value]
        return "[\n" + "\n".join(rows) + "\n" + " " * indent + "]"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(item, indent) for item in value) + "]"
    return repr(value)


NOTE = (
    "How to read this: the code of each variant is shown as text, the lines that "
    "ran to compute each table; it is part of a plugin and does not run on its own. The code "
    "cells recompute each table with tracer.trace(...) and print it as the lesson shows it; "
    "run them top to bottom (attention-tracer must be installed in the kernel)."
)


def _quiz(step_view: StepView, context: Exporting) -> Iterator[Block]:
    runner = context.runner
    step = step_as(step_view.step, Quiz)
    lines = [f"**Quiz:** {escape(step_view.text)}"]
    view = step_view.quiz
    assert view is not None  # the walk gives every quiz its tables
    if view.tables:
        yield Block("markdown", lines[0] + (f"\n\n{escape(view.caption)}" if view.caption else ""))
        lines = []
        for table in view.tables:
            yield from _tensor_block(table, "", code=False, context=context)
        if view.hidden:
            lines.append(
                escape("(? = a number that would give the answer away, under Answer below)")
                if view.own
                else escape(hidden_legend(view.tables))
            )
    # The view's choices and hints: what the walk lets them say (no other quiz's answer).
    lines += [
        f"{chr(ord('a') + i)}) {escape(choice)}" for i, choice in enumerate(step_view.choices)
    ]
    if step.quiz_kind == "multiple":
        lines.append("(more than one choice may be right)")
    for number, hint in enumerate(step_view.hints, start=1):
        lines.append(f"<details><summary>Hint {number}</summary>\n\n{escape(hint)}\n\n</details>")
    answer = escape(answer_shown(step, runner))
    why = f"\n\n{escape(runner.text(step.explanation, step))}" if step.explanation else ""
    lines.append(f"<details><summary>Answer</summary>\n\n{answer}{why}\n\n</details>")
    yield Block("markdown", "\n\n".join(line for line in lines if line))


_DRAW: dict[str, Callable[[StepView, Exporting], Iterator[Block]]] = {
    "narration": _narration,
    "show": _show,
    "loop": _loop,
    "compare": _compare,
    "quiz": _quiz,
    "checkpoint": _checkpoint,
}
"""How an export draws each kind of step's view (what the view holds is the walk's)."""


def markdown(
    lesson: Lesson,
    host: PluginHost,
    *,
    runner: LessonRun | None = None,
    folder: Path | None = None,
) -> str:
    """The lesson as Markdown (``runner``, ``folder``: as :func:`blocks` takes them)."""
    parts = []
    for block in blocks(lesson, host, runner=runner, folder=folder):
        if block.kind == "markdown":
            parts.append(block.text)
        elif block.kind == "source":
            files = f" of {block.output}" if block.output else ""
            parts.append(
                f"The lines{escape(files)} that ran (to read; not runnable on their own):"
                f"\n\n```python\n{block.text}\n```"
            )
        elif block.kind == "code":
            output = f"\n\n```text\n{block.output}\n```" if block.output else ""
            parts.append(f"```python\n{block.text}\n```{output}")
        else:
            parts.append(f"```text\n{block.text}\n```")
    return "\n\n".join(parts) + "\n"


def notebook(
    lesson: Lesson,
    host: PluginHost,
    *,
    runner: LessonRun | None = None,
    folder: Path | None = None,
) -> Any:
    """An nbformat-4 notebook node: Markdown cells, the variants' code as text, and code cells
    that recompute each table (with the output they print, so it reads before it is run).
    ``runner``, ``folder``: as :func:`blocks` takes them (a notebook's code runs in the
    notebook's own folder, so ``folder`` is where it is written)."""
    nbformat = _nbformat()
    new = nbformat.v4
    cells = []
    for block in blocks(lesson, host, runner=runner, folder=folder):
        if block.kind == "markdown":
            cells.append(new.new_markdown_cell(block.text))
        elif block.kind == "source":
            files = f" of {block.output}" if block.output else ""
            cells.append(
                new.new_markdown_cell(
                    f"The lines{escape(files)} that ran (to read; not runnable on their own):"
                    f"\n\n```python\n{block.text}\n```"
                )
            )
        elif block.kind == "code":
            outputs = []
            if block.output:
                outputs.append(new.new_output("stream", name="stdout", text=block.output + "\n"))
            cells.append(new.new_code_cell(block.text, outputs=outputs))
        else:
            cells.append(new.new_markdown_cell(f"```text\n{block.text}\n```"))
    document = new.new_notebook(cells=cells)
    document.metadata["language_info"] = {"name": "python"}
    document.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    document.metadata["attention_tracer"] = {"lesson": lesson.name}
    nbformat.validate(document)
    return document


def _nbformat() -> Any:
    """nbformat has no type hints; it is used through this one untyped handle."""
    import importlib  # nbformat loads only for --to ipynb, by name: it has no type hints

    return importlib.import_module("nbformat")


def export_text(
    lesson: Lesson,
    host: PluginHost,
    to: str,
    *,
    runner: LessonRun | None = None,
    folder: Path | None = None,
) -> str:
    """The whole document as text, in format ``to`` (``md`` or ``ipynb``); ``runner`` and
    ``folder`` (where the document is written): as :func:`blocks` takes them."""
    if to == "md":
        return markdown(lesson, host, runner=runner, folder=folder)
    text: str = _nbformat().writes(notebook(lesson, host, runner=runner, folder=folder))
    return text if text.endswith("\n") else text + "\n"
