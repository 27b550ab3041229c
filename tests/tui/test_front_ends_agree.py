"""Every shipped lesson through the walk and through every front end: the app, ``--plain`` and
the Markdown export show each step's prose and tables exactly as the walk decided them."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot

from tracer.lessons.hiding import Table
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import find_lessons, load_lesson
from tracer.lessons.model import Checkpoint, Lesson, LessonStep, Loop, Quiz
from tracer.lessons.views import TABLE_WIDTH, StepView, step_view
from tracer.plugin_host import PluginHost
from tracer.render.text import format_tensor
from tracer.text.export import escape, export_text
from tracer.text.plain_lesson import plain_lines
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.text_pane import ProsePane

from .conftest import settle

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


def drawing(step: LessonStep) -> tuple[object, ...]:
    """What decides how the app draws a step: its kind, its quiz kind, and for each table
    the variant, whether it is derived by operations, and whether it is one named tensor."""
    tables = tuple((ref.variant, bool(ref.then), ref.tensor is None) for ref in step.tables())
    loop = (step.variant,) if isinstance(step, Loop) else ()
    return (step.kind, getattr(step, "quiz_kind", None), tables, *loop)


@cache
def first_of_each_drawing() -> frozenset[tuple[str, int]]:
    """(lesson, step index) of the first step, over every shipped lesson in order, drawn each
    way: the app is checked on each way of drawing a step once, not on every repeat of it
    (the walk, --plain and the exports are checked on every step above and below)."""
    host = PluginHost(())
    seen: set[tuple[object, ...]] = set()
    chosen = set()
    for ref in SHIPPED:
        for index, step in enumerate(load_lesson(ref.path, host).steps):
            if drawing(step) not in seen:
                seen.add(drawing(step))
                chosen.add((ref.name, index))
    return frozenset(chosen)


async def test_the_app_shows_what_the_walk_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One app takes every shipped lesson in turn, each opened as ctrl+p → "Open lesson" does
    # (a fresh data folder: nothing to resume): what is drawn is the same as in an app started
    # on the lesson, for a fraction of the start-ups. The app jumps from step to step answering
    # nothing, so every quiz's answer stays hidden.
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path / "data"))
    chosen = first_of_each_drawing()
    app = make_lesson_app(SHIPPED[0].name, resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for ref in SHIPPED:
            if ref is not SHIPPED[0]:
                app.open_lesson(ref.path)
                await settle(pilot)
            lesson, _, views = walked(ref.name, answered=frozenset())
            screen = app.screen
            assert isinstance(screen, LessonScreen) and screen.session is not None, ref.name
            assert screen.session.lesson.title == lesson.title, ref.name
            assert screen.session.position.step == 0, ref.name
            await app_shows_what_the_walk_decided(pilot, screen, ref.name, views, chosen)


async def app_shows_what_the_walk_decided(
    pilot: Pilot[object],
    screen: LessonScreen,
    name: str,
    views: list[StepView],
    chosen: frozenset[tuple[str, int]],
) -> None:
    app = pilot.app
    for view in views:
        where = f"{name} step {view.number + 1}"
        number_quiz = isinstance(view.step, Quiz) and view.step.quiz_kind == "number"
        if (name, view.number) not in chosen and not number_quiz:
            continue
        screen.go_to_step(view.number)
        await settle(pilot)
        if number_quiz:
            assert screen.session is not None and isinstance(view.step, Quiz)
            assert not answer_on_screen(app, screen.session.runner, view.step), where
        if (name, view.number) not in chosen:
            continue
        kind = view.kind
        pane = {"narration": "#narration-text", "checkpoint": "#checkpoint-text"}
        prose = screen.query_one(pane.get(kind, "#caption"), ProsePane).text
        expected = view.quiz.caption if view.quiz is not None else view.text
        assert prose == expected, where
        if kind not in ("show", "quiz") or not view.tables:
            continue
        grids = [v.grid for v in screen.pane.views if v.display and v.grid is not None]
        if kind == "show" or (view.quiz is not None and view.quiz.context is not None):
            assert [g.name for g in grids] == [t.resolved.name for t in view.tables], where
        for grid, table in zip(grids, view.tables, strict=False):
            assert grid.highlight.hidden == table.hidden, where


NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:[.,]\d+)?(?:e[-+]?\d+)?(?![\w]|[.,]\d)")


def answer_on_screen(app: App[object], runner: LessonRunner, quiz: Quiz) -> list[str]:
    """Each number written with decimals on the whole screen, as the terminal shows it (the
    source pane, the timeline, the footer and the answer box included), that a learner could
    type as the quiz's answer: within its tolerance, or printed as the answer prints. (A
    whole answer, a count, is checked in the tables and prose by
    tests/session/test_giveaways.py: on the whole screen the timeline's step numbers and
    the tables' shapes would read as one.)"""
    answer = float(runner.answer(quiz))  # type: ignore[arg-type]
    allowed = quiz.tolerance * abs(answer) if quiz.relative else quiz.tolerance
    # Textual's own composition of the screen: every line as the terminal shows it.
    text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
    found = []
    for match in NUMBER.finditer(text):
        written = match.group()
        value = float(written.replace("−", "-").replace(",", "."))
        if not any(mark in written for mark in ".,e"):
            continue
        if abs(value - answer) <= allowed + 1e-9 or f"{value:.4f}" == f"{answer:.4f}":
            found.append(text[max(0, match.start() - 40) : match.end() + 10])
    return found


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
