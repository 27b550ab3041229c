"""Python's full collections run between key presses, when the learner is reading."""

from __future__ import annotations

import types

import pytest

from tracer.tui import idle_collect
from tracer.tui.idle_collect import IdleCollector, full_collection_due
from tracer.tui.launch import make_lesson_app

from .conftest import LESSON, PLUGINS, settle


@pytest.mark.parametrize(
    ("counts", "thresholds", "due"),
    [
        ((0, 0, 0), (700, 10, 10), False),
        ((0, 3, 4), (700, 10, 10), False),
        ((0, 0, 5), (700, 10, 10), True),
        ((12, 9, 10), (700, 10, 10), True),
        ((0, 0, 9), (0, 10, 10), False),  # threshold 0: the user switched collection off
        ((0, 0, 9), (700, 10, 0), False),
        ((0, 0, 1), (700, 10, 2), True),
    ],
)
def test_a_full_collection_is_due_half_way_to_pythons_own(
    counts: tuple[int, int, int], thresholds: tuple[int, int, int], due: bool
) -> None:
    assert full_collection_due(counts, thresholds) is due


class FakeGc:
    """Stands in for the gc module: fixed counts, and a record of collections."""

    def __init__(self, counts: tuple[int, int, int], enabled: bool = True) -> None:
        self.counts, self.enabled, self.collected = counts, enabled, 0

    def module(self) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            isenabled=lambda: self.enabled,
            get_count=lambda: self.counts,
            get_threshold=lambda: (700, 10, 10),
            collect=self.collect,
        )

    def collect(self) -> int:
        self.collected += 1
        return 0


def test_it_collects_only_when_due_and_the_input_has_been_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.0]
    monkeypatch.setattr(idle_collect.time, "monotonic", lambda: clock[0])
    fake = FakeGc((0, 0, 6))
    monkeypatch.setattr(idle_collect, "gc", fake.module())
    collector = IdleCollector()
    collector.input_seen()
    clock[0] += idle_collect.QUIET_SECONDS / 2
    assert not collector.check()  # a key a moment ago: it waits
    clock[0] += idle_collect.QUIET_SECONDS
    assert collector.check() and fake.collected == 1
    fake.counts = (0, 0, 2)
    assert not collector.check() and fake.collected == 1  # not due
    fake.counts, fake.enabled = (0, 0, 9), False
    assert not collector.check() and fake.collected == 1  # the collector is off


async def test_the_app_notes_each_key_and_checks_a_few_times_a_second() -> None:
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        before = app.collector.last_input
        await pilot.press("right")
        await settle(pilot)
        assert app.collector.last_input > before
        checks: list[bool] = []
        original = app.collector.check
        app.collector.check = lambda: checks.append(original()) or False  # type: ignore[method-assign]
        await pilot.pause(idle_collect.CHECK_SECONDS * 3)
        assert checks  # the interval timer calls it
