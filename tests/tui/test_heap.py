"""The garbage collector waits while a key's step is drawn, and runs again after the frame."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from tracer.tui import heap
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen

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


def collector_at_each_draw(screen: LessonScreen) -> list[bool]:
    """Whether the collector was on, each time ``screen`` draws a step from now on."""
    seen: list[bool] = []
    draw = screen._draw
    screen._draw = lambda session: (seen.append(gc.isenabled()), draw(session))[1]  # type: ignore[method-assign]
    return seen


@pytest.mark.usefixtures("collector_on")
async def test_the_collector_is_off_while_a_key_is_drawn_and_on_after_its_frame() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        seen = collector_at_each_draw(screen)
        await pilot.press("right")
        await settle(pilot)
        assert seen == [False]  # the step was drawn with the collector paused
        await resumed()
        assert gc.isenabled()  # and it ran again after the frame


async def resumed(limit_s: float = 5.0) -> None:
    """Wait until the collector's pause has ended (a timer, a little after the frame)."""
    deadline = asyncio.get_running_loop().time() + limit_s
    while heap.COLLECTOR.paused:
        assert asyncio.get_running_loop().time() < deadline, "the collector stayed paused"
        await asyncio.sleep(0.005)


@pytest.mark.usefixtures("collector_on")
async def test_the_collector_waits_a_little_after_the_frame_so_that_the_frame_is_written_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "RESUME_AFTER_FRAME_S", 1.0)
    monkeypatch.setattr(heap, "RESUME_AFTER_S", 5.0)  # the fallback is not what resumes it
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        drawn = asyncio.get_running_loop().create_future()
        draw = screen._draw
        screen._draw = lambda session: (draw(session), drawn.set_result(None))[0]  # type: ignore[method-assign]
        await pilot.press("right")
        await drawn
        await pilot.pause()  # the frame
        assert not gc.isenabled()  # not straight after the frame...
        await resumed()
        assert gc.isenabled()  # ...but soon after it


@pytest.mark.usefixtures("collector_on")
async def test_a_key_in_the_pause_after_a_frame_keeps_the_collector_off_until_its_own_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "RESUME_AFTER_FRAME_S", 0.3)
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        seen = collector_at_each_draw(screen)
        await pilot.press("right")
        await pilot.pause()
        await pilot.press("right")  # within the first frame's pause
        await settle(pilot)
        assert seen == [False, False]
        await resumed()
        assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
async def test_keys_held_down_do_not_keep_the_collector_off_past_the_pauses_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "RESUME_AFTER_S", 0.5)
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app):
        loop = asyncio.get_running_loop()
        started = loop.time()
        ran = False
        while not ran and loop.time() - started < 2.0:  # a key every 50 ms, and no frame
            heap.COLLECTOR.key_pressed(app)
            ran = gc.isenabled()
            await asyncio.sleep(0.05)
            ran = ran or gc.isenabled()
        assert ran  # within the limit from the first key, not after the last


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


@pytest.mark.usefixtures("collector_on")
async def test_an_app_closed_while_a_key_paused_the_collector_leaves_it_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The timer that would resume it ends with the app: the process (a notebook's, the
    # suite's next test) must not go on without a collector.
    monkeypatch.setattr(heap, "RESUME_AFTER_S", 60.0)
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, _):
        await pilot.press("x")  # bound to nothing: only the timer would resume it
        assert not gc.isenabled() and heap.COLLECTOR.paused
    assert gc.isenabled() and not heap.COLLECTOR.paused
