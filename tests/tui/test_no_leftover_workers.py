"""A plugin's worker processes end with whatever started them, not whenever memory is collected.

The app freezes its heap after loading, so the collector never frees a stepper or a lesson
runner once frozen: a worker process left to the collector would live as long as the
program. A learner who opens lessons and variants one after another, or steps back through
a loop (which starts the run again), must not pile up processes of several hundred MB.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tracer.lessons import load_lesson
from tracer.lessons.check import check_lesson
from tracer.lessons.lesson_runner import LessonRunner
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions
from tracer.tui.launch import explore_loader, make_explore_app, make_lesson_app

from .conftest import LESSON, PLUGINS, press, settle

pytestmark = pytest.mark.isolated  # the workers these tests look at are the forked ones


def children() -> set[int]:
    """This process's living child processes (a plugin's worker is one, below its guard)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rsplit(")", 1)[1].split()
        state, parent = fields[0], int(fields[1])
        if parent == os.getpid() and state != "Z":
            found.add(int(entry.name))
    return found


async def test_the_explorer_stops_its_worker_when_it_closes() -> None:
    before = children()
    app = make_explore_app("tiny", TraceOptions(), [str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right", "right")
        assert children() - before  # the plugin runs in a worker process while it is shown
    assert children() - before == set()


@pytest.mark.full_collection  # the app's own collection before it freezes its heap, once
async def test_a_lesson_stops_its_workers_when_it_closes() -> None:
    before = children()
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        for step in range(4):  # a show step, a loop, a quiz: each needs a run of the plugin
            screen.go_to_step(step)  # type: ignore[attr-defined]
            await settle(pilot)
        assert children() - before
    assert children() - before == set()


def test_going_back_in_a_loop_stops_the_run_it_replaces() -> None:
    before = children()
    stepper = explore_loader("tiny", TraceOptions(), [str(PLUGINS)]).stepper
    try:
        stepper.window = 1  # forget at once, so going back must run the variant again
        stepper.get(5)
        stepper.get(1)
        assert stepper.replays == 1
        assert len(children() - before) == 1  # the new run's worker; the old one has stopped
    finally:
        stepper.close()
    assert children() - before == set()


def test_checking_a_lesson_leaves_no_worker_behind() -> None:
    host = PluginHost([str(PLUGINS)], use_env=False)
    lesson = load_lesson(str(LESSON), host)
    before = children()
    assert check_lesson(lesson, host, typed=False) == []
    runner = LessonRunner(lesson, host)
    loop = next(step for step in lesson.steps if step.kind == "loop")
    next(iter(runner.substeps(loop)))  # stops after one sub-step: the rest is not needed
    assert children() - before == set()
    runner.close()
