"""A plugin's variant computing in its worker process, seen from the app.

The test plugin ``sleeps`` stays inside its second step until a file appears.
Esc must stop that step (killing the worker), leave the learner where they
were, and let them step on once the variant would finish; past the step time
limit the app shows the limit's one-line message.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tracer.tracing.runner import TraceOptions
from tracer.tracing.worker import WorkerTrace
from tracer.tui.app import TracerApp
from tracer.tui.explore_screen import ExploreScreen
from tracer.tui.launch import make_explore_app
from tracer.variant import Stage

from .conftest import PLUGINS, settle

pytestmark = pytest.mark.isolated  # the workers these tests look at are the forked ones


def explore_sleeps() -> TracerApp:
    return make_explore_app("sleeps", TraceOptions(), [str(PLUGINS)])


async def wait_for(pilot: object, condition: object, limit: int = 3000) -> None:
    for _ in range(limit):
        await pilot.pause()  # type: ignore[attr-defined]
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0.005)
    raise TimeoutError("the condition never held")


async def test_esc_stops_a_step_computing_in_the_worker_and_stepping_on_runs_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = tmp_path / "release"
    monkeypatch.setenv("ATTN_TEST_RELEASE", str(release))
    app = explore_sleeps()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, ExploreScreen)
            await wait_for(pilot, lambda: screen.session is not None and screen.position == 0)
            assert screen.session is not None
            stepper = screen.session.stepper
            worker = stepper.trace
            assert isinstance(worker, WorkerTrace)
            await pilot.press("right")
            await wait_for(pilot, lambda: screen.busy)
            child = worker._process
            assert child is not None and child.is_alive()
            await pilot.press("escape")
            await wait_for(pilot, lambda: not screen.busy)
            # The app's job thread joins (reaps) the killed worker too: a join here can return
            # while that thread still holds the exit status, so wait for it to be recorded.
            deadline = time.monotonic() + 5
            while child.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not child.is_alive()  # Esc killed the worker in the middle of its step
            assert screen.position == 0 and app.screen is screen
            release.write_text("go", encoding="utf-8")
            await pilot.press("right")
            await settle(pilot)
            step = stepper.get(screen.position)
            assert screen.position == 1 and isinstance(step, Stage) and step.name == "scores"
    finally:
        release.write_text("go", encoding="utf-8")


async def test_a_step_past_the_time_limit_is_reported_in_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_TEST_RELEASE", str(tmp_path / "never"))
    monkeypatch.setenv("ATTN_STEP_TIMEOUT", "0.5")
    app = explore_sleeps()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await settle(pilot)
        await pilot.press("right")
        await wait_for(pilot, lambda: getattr(app.screen, "failure", None) is not None)
        message = app.screen.failure  # type: ignore[attr-defined]
        assert "variant 'sleeps' took more than 0.5 s on one step and was stopped" in message
        assert "faulty.py:" in message  # the line it was stuck on
        assert app.screen is screen and app.is_running
