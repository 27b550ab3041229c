"""Each modern variant can be stepped through in the app, sub-steps of any rank included."""

from __future__ import annotations

import pytest

from tests.tui.conftest import lesson_running, press, settle
from tracer.tracing.runner import TraceOptions
from tracer.tui.explore_screen import ExploreScreen
from tracer.tui.launch import make_explore_app
from tracer.tui.modals import ErrorScreen
from tracer.tui.tensor_pane import TensorPane

CASES = [
    ("sliding-window", {}),
    ("grouped-query", {"heads": 4, "kv_heads": 2}),
    ("kv-cache", {}),
    ("online-softmax", {"causal": True}),
    ("training", {"steps": 3}),
    ("induction", {"head": 1}),
    ("flash-backward", {"causal": True}),
]


@pytest.mark.parametrize(("variant", "options"), CASES, ids=[c[0] for c in CASES])
async def test_step_through_every_step(variant: str, options: dict[str, object]) -> None:
    app = make_explore_app(variant, TraceOptions(d_out=4, options=options), [])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        session = screen.session
        assert session is not None
        for _ in range(40):
            await press(pilot, "right")
            assert not isinstance(app.screen, ErrorScreen)
            # The pane shows an error in place of a tensor it cannot draw; none may appear.
            assert not screen.query_one(TensorPane).has_class("-error"), screen.position
        stepper = session.stepper
        assert stepper.finished and screen.position == stepper.total - 1


async def test_the_induction_lesson_steps_through_in_the_app() -> None:
    """Lesson 13 in the app: every step shows without an error, four-head tables included."""
    from tracer.tui.launch import make_lesson_app

    app = make_lesson_app("13_induction_heads", resume=False)
    async with lesson_running(app) as (pilot, screen):
        for step in range(len(screen.session.lesson.steps)):
            screen.go_to_step(step)
            await settle(pilot)
            assert not isinstance(app.screen, ErrorScreen), step
            assert not screen.pane.has_class("-error"), step
