"""Every tensor of a step is reachable: no fixed number of tables drops the rest."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from tracer.tracing.runner import TraceOptions
from tracer.tui.app import TracerApp
from tracer.tui.explore_screen import ExploreScreen
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.tensor_view import TensorView
from tracer.variant import SubStep

from .conftest import lesson_running, press, settle


def explore(variant: str) -> TracerApp:
    return make_explore_app(variant, TraceOptions(), [])


async def reach_every_table(
    pilot: Pilot[int], pane: TensorPane, names: list[str], *, crowded: bool
) -> None:
    """Each table is on screen, in order, and ``t`` brings each one into sight in turn."""
    assert pane.tensor_names[-len(names) :] == names
    drawn = [view for view in pane.views if view.display and view.grid is not None]
    assert [view.grid.name for view in drawn] == pane.tensor_names  # type: ignore[union-attr]
    assert "Not shown" not in pane.detail.plain
    hidden = pane.hidden_tables()
    assert bool(hidden) or not crowded
    if hidden:  # the pane says how many are out of sight, and names them
        assert f"{len(hidden)} more table" in str(pane.border_subtitle)
        assert all(name in str(pane.border_subtitle) for name in hidden)
    stack = pane.query_one("#tensor-stack")
    for view in drawn:
        await press(pilot, "t")
        focused = pilot.app.screen.focused
        assert isinstance(focused, TensorView) and focused is view  # in order, each one
        await pilot.pause()
        region = focused.region
        assert region.height > 0
        assert region.y < stack.content_region.bottom and region.bottom > stack.content_region.y
    # The mouse reaches them too: a click on a table in sight focuses it.
    seen = stack.content_region
    pilot.app.screen.set_focus(None)
    await pilot.pause()
    target = next(
        view for view in drawn if view.region.height > 0 and seen.contains_region(view.region)
    )
    await pilot.click(target)
    assert pilot.app.screen.focused is target


async def go_to_substep(pilot: Pilot[int], screen: ExploreScreen, stage: str) -> SubStep:
    for _ in range(50):
        assert screen.session is not None
        step = screen.session.stepper.get(screen.position)
        if isinstance(step, SubStep) and step.stage == stage:
            return step
        await press(pilot, "right")
    raise AssertionError(f"no sub-step of {stage}")


@pytest.mark.parametrize(
    ("variant", "stage", "last"),
    [
        ("online-softmax", "tiles", ["p", "l", "O", "output"]),
        ("kv-cache", "decode", ["weights", "context"]),
    ],
)
@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_explore_reaches_every_tensor_of_a_sub_step(
    variant: str, stage: str, last: list[str], size: tuple[int, int]
) -> None:
    app = explore(variant)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        step = await go_to_substep(pilot, screen, stage)
        pane = screen.query_one(TensorPane)
        assert len(step.tensors) > 6
        assert pane.tensor_names[-len(step.tensors) :] == list(step.tensors)
        await reach_every_table(pilot, pane, last, crowded=size == (80, 24))


async def test_lesson_10s_loop_shows_l_and_o_which_its_caption_asks_to_watch() -> None:
    app = make_lesson_app("10_online_softmax", resume=False)
    async with lesson_running(app, (80, 24)) as (pilot, screen):
        assert screen.session is not None
        steps = screen.session.lesson.steps
        loop = next(n for n, step in enumerate(steps) if step.kind == "loop")
        screen.go_to_step(loop)
        await settle(pilot)
        await reach_every_table(pilot, screen.pane, ["p", "l", "O", "output"], crowded=True)


async def test_a_pane_being_taken_down_measures_nothing_out_of_sight() -> None:
    # A screen taken down (another lesson opened) removes the pane's stack of tables before
    # the pane itself; a measurement queued after the last frame then finds no stack. It
    # says nothing is out of sight instead of failing (CI once caught NoMatches here).
    app = explore("naive-loop")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(TensorPane)
        stack = pane.query_one("#tensor-stack")
        await stack.remove()
        assert pane.is_attached and not stack.is_attached
        assert pane.hidden_tables() == []
        pane.say_hidden()
        assert "out of sight" not in str(pane.border_subtitle or "")
