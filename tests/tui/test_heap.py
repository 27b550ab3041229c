"""The garbage collector waits while a key's step is drawn, and runs again after the frame."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from tracer.tui import heap
from tracer.tui.launch import make_lesson_app

from .conftest import LESSON, PLUGINS, lesson_running, settle


@pytest.fixture
def collector_on() -> Iterator[None]:
    """Each test starts with the collector on and leaves it as it found it."""
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        heap.COLLECTOR.resume()
        (gc.enable if was else gc.disable)()


@pytest.mark.usefixtures("collector_on")
async def test_the_collector_is_off_while_a_key_is_drawn_and_on_after_its_frame() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        seen: list[bool] = []
        draw = screen._draw
        screen._draw = lambda session: (seen.append(gc.isenabled()), draw(session))[1]  # type: ignore[method-assign]
        await pilot.press("right")
        await settle(pilot)
        assert seen == [False]  # the step was drawn with the collector paused
        assert gc.isenabled() and not heap.COLLECTOR.paused  # and it ran again after the frame


@pytest.mark.usefixtures("collector_on")
async def test_a_key_that_draws_nothing_resumes_the_collector_soon_all_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "RESUME_AFTER_S", 0.5)  # room for a loaded machine's key press
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("x")  # bound to nothing
        assert not gc.isenabled()
        await asyncio.sleep(heap.RESUME_AFTER_S * 2)
        await pilot.pause()
        assert gc.isenabled() and not heap.COLLECTOR.paused


@pytest.mark.usefixtures("collector_on")
async def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        gc.disable()  # a profiler, say
        await pilot.press("right")
        await settle(pilot)
        await asyncio.sleep(heap.RESUME_AFTER_S * 2)
        await pilot.pause()
        assert not gc.isenabled()
