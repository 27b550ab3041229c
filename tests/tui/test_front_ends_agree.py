"""Every shipped lesson through the walk and through every front end: ``--plain``, the Markdown
and the notebook exports show each step's prose and tables exactly as the walk decided them
(the app: tests/tui/test_front_ends_app.py)."""

from __future__ import annotations

import pytest

from tracer.lessons.hiding import Table
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import find_lessons, load_lesson
from tracer.lessons.model import Checkpoint, Lesson, Loop, Quiz
from tracer.lessons.views import TABLE_WIDTH, StepView, step_view
from tracer.plugin_host import PluginHost
from tracer.render.text import format_tensor
from tracer.text.export import escape, export_text
from tracer.text.plain_lesson import plain_lines

SHIPPED = [ref for ref in find_lessons(()) if ref.origin == "built-in"]


def walked(
    name: str, answered: frozenset[str] | None = None
) -> tuple[Lesson, PluginHost, list[StepView]]:
    """Every step's view: read top to bottom (None), or with just ``answered`` answered."""
    host = PluginHost(())
    ref = next(ref for ref in SHIPPED if ref.name == name)
    lesson = load_lesson(ref.path, host)
    runner = LessonRunner(lesson, host)
    views = [step_view(lesson, runner, n, answered) for n in range(len(lesson.steps))]
    return lesson, host, views


def printed(table: Table) -> str:
    shown = table.resolved
    return format_tensor(
        shown.tensor, shown.tokens, shown.query, shown.axes, table.hidden, TABLE_WIDTH
    )


def sections(text: str, marker: str, count: int) -> list[str]:
    starts = [text.index(f"{marker}{n} of {count}") for n in range(1, count + 1)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


@pytest.mark.parametrize("name", [ref.name for ref in SHIPPED])
def test_plain_and_markdown_show_what_the_walk_decided(name: str) -> None:
    lesson, host, views = walked(name)
    count = len(views)
    plain = sections("\n".join(plain_lines(lesson, host)), "--- Step ", count)
    markdown = sections(export_text(lesson, host, "md"), "## Step ", count)
    for view, text, document in zip(views, plain, markdown, strict=True):
        where = f"{name} step {view.number + 1}"
        prose = view.text.strip()
        if isinstance(view.step, Checkpoint):
            assert view.points and prose.split("\n")[2:] == [f"• {p}" for p in view.points]
            for point in view.points:
                assert f"- {point.strip()}" in text, where
                assert f"- {escape(point)}" in document, where
        elif prose:
            for line in prose.split("\n"):
                assert line.strip() in text, where
            if not isinstance(view.step, (Quiz, Loop)):
                assert escape(prose).split("\n")[0] in document, where
        for table in view.tables:
            assert printed(table) in text, where
            assert printed(table) in document, where


def notebook_sections(lesson: Lesson, host: PluginHost, count: int) -> list[list[dict[str, str]]]:
    """The exported notebook's cells, step by step: each cell's kind, its source and the
    output saved with it (what a reader sees before running anything)."""
    import json

    document = json.loads(export_text(lesson, host, "ipynb"))
    steps: list[list[dict[str, str]]] = []
    for cell in document["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.startswith("## Step "):
            assert source.startswith(f"## Step {len(steps) + 1} of {count}")
            steps.append([])
            continue
        saved = "".join(
            "".join(output.get("text", "")) for output in cell.get("outputs", ())
        )  # fmt: skip
        if steps:
            steps[-1].append({"kind": cell["cell_type"], "source": source, "output": saved})
    assert len(steps) == count
    return steps


@pytest.mark.parametrize("name", [ref.name for ref in SHIPPED])
def test_the_notebook_export_shows_what_the_walk_decided(name: str) -> None:
    """Step by step, the notebook's markdown holds the walk's prose, and every table the walk
    shows is in a markdown cell or in the saved output of the code cell that recomputes it.
    A table with hidden cells is only ever text: no code cell would print the answer."""
    lesson, host, views = walked(name)
    steps = notebook_sections(lesson, host, len(views))
    for view, cells in zip(views, steps, strict=True):
        where = f"{name} step {view.number + 1}"
        markdown = "\n".join(cell["source"] for cell in cells if cell["kind"] == "markdown")
        code = [cell for cell in cells if cell["kind"] == "code"]
        prose = view.text.strip()
        if view.kind == "checkpoint":
            for point in view.points:
                assert f"- {escape(point)}" in markdown, where
        elif prose and view.kind == "loop":  # its caption heads the sub-steps, as text
            for line in prose.split("\n"):
                assert line.strip() in markdown, where
        elif prose:
            assert escape(prose.split("\n")[0]) in markdown, where
        for table in view.tables:
            shown = printed(table)
            in_text = shown in markdown
            in_code = [cell for cell in code if cell["output"].rstrip("\n") == shown]
            assert in_text or in_code, where
            if table.hidden:
                assert "?" in shown and in_text and not in_code, where
                whole = printed(Table(table.ref, table.resolved, table.role, table.focus))
                assert not any(cell["output"].rstrip("\n") == whole for cell in code), where
        for cell in code:  # every code cell recomputes a table of this step, or sets up
            assert cell["output"].rstrip("\n") in {printed(t) for t in view.tables}, where
