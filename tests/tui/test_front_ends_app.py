"""Every shipped lesson in the app: each way of drawing a step shows the prose and tables the
walk decided, and no number quiz's answer is anywhere on the screen. (In its own file so that
it runs beside tests/tui/test_front_ends_agree.py, which checks --plain and the exports.)"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot

from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson
from tracer.lessons.model import LessonStep, Loop, Quiz
from tracer.lessons.views import StepView
from tracer.plugin_host import PluginHost
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.text_pane import ProsePane

from .conftest import settle
from .test_front_ends_agree import SHIPPED, walked


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
