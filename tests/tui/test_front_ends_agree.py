"""Every shipped lesson through the walk and through every front end: the app, ``--plain`` and
the Markdown export show each step's prose and tables exactly as the walk decided them."""

from __future__ import annotations

import pytest

from tracer.lessons.export import escape, export_text
from tracer.lessons.loader import find_lessons, load_lesson
from tracer.lessons.model import Checkpoint, Lesson, Loop, Quiz
from tracer.lessons.plain import plain_lines
from tracer.lessons.runner import LessonRunner
from tracer.lessons.walk import TABLE_WIDTH, StepView, Table, step_view
from tracer.plugin_host import PluginHost
from tracer.render.text import format_tensor
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.text_pane import ProsePane

from .conftest import settle

SHIPPED = [ref for ref in find_lessons(()) if ref.origin == "built-in"]


def walked(name: str) -> tuple[Lesson, PluginHost, list[StepView]]:
    host = PluginHost(())
    ref = next(ref for ref in SHIPPED if ref.name == name)
    lesson = load_lesson(ref.path, host)
    runner = LessonRunner(lesson, host)
    return lesson, host, [step_view(lesson, runner, n) for n in range(len(lesson.steps))]


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


@pytest.mark.parametrize("name", [ref.name for ref in SHIPPED])
async def test_the_app_shows_what_the_walk_decided(name: str) -> None:
    _, _, views = walked(name)
    app = make_lesson_app(name, resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LessonScreen)
        for view in views:
            where = f"{name} step {view.number + 1}"
            screen.go_to_step(view.number)
            await settle(pilot)
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
