"""`attn explore`, driven by Textual's pilot: stepping, jumping, clicks, keys, errors and sizes.

Numbers are checked against torch (``torch.dot``) and seed 001's printed score.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tracer.inputs import load_inputs
from tracer.render.text import format_number
from tracer.tracing.runner import TraceOptions
from tracer.tui.app import TracerApp
from tracer.tui.explore_screen import ExploreScreen
from tracer.tui.grid import CanvasGrid, TensorGrid
from tracer.tui.launch import make_explore_app
from tracer.tui.modals import ErrorScreen, HelpScreen
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.text_pane import TextPane
from tracer.tui.timeline import Timeline, TimelineItem
from tracer.variant import Stage, SubStep

from .conftest import PLUGINS, press, settle

INPUTS = torch.tensor(load_inputs("your-journey").embeddings)


def explore(variant: str = "tiny", **options: object) -> TracerApp:
    return make_explore_app(variant, TraceOptions(**options), [str(PLUGINS)])  # type: ignore[arg-type]


def screen_of(app: TracerApp) -> ExploreScreen:
    screen = app.screen
    assert isinstance(screen, ExploreScreen)
    return screen


def text_of(app: TracerApp, selector: str) -> str:
    widget = app.screen.query_one(selector, TextPane)
    return str(widget.render())


def pane_names(app: TracerApp) -> list[str]:
    return app.screen.query_one(TensorPane).tensor_names


async def test_first_frame_shows_a_loading_pane_before_the_variant_runs() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = screen_of(app)
        # Before the worker has delivered anything, the pane is loading and nothing ran.
        assert screen.session is None
        assert screen.query_one(TensorPane).loading
        await settle(pilot)
        assert screen.session is not None and not screen.query_one(TensorPane).loading
        assert screen.position == 0


async def test_stepping_forward_and_back_through_a_loop() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await press(pilot, "right", "n", "space")
        assert screen.position == 3
        step = screen.session.stepper.get(3)  # type: ignore[union-attr]
        assert isinstance(step, SubStep) and step.position == (0, 2)
        grid = screen.query_one(TensorPane).grid
        assert isinstance(grid, CanvasGrid)
        assert grid.highlight.current == (0, 2)
        # The matrix so far: row 0 has three scores, each a dot product; the rest is empty.
        row = grid.row(0, 0, 6)
        expected = [float(torch.dot(INPUTS[0], INPUTS[j])) for j in range(3)]
        assert row[:3] == pytest.approx(expected, abs=1e-6)
        assert row[3:] == [None, None, None]
        assert grid.row(1, 0, 6) == [None] * 6
        # The declared dot product is written out term by term, with torch's own numbers.
        detail = text_of(app, "#tensor-detail")
        terms = " + ".join(
            f"{format_number(float(a))}×{format_number(float(b))}"
            for a, b in zip(INPUTS[0], INPUTS[2], strict=True)
        )
        total = format_number(float(torch.dot(INPUTS[0], INPUTS[2])))
        assert "score = query · key" in detail
        assert f"{terms} = {total}" in detail.replace("\n", " ")
        # The vectors themselves are on screen as tables, below the matrix.
        assert pane_names(app) == ["scores", "query", "key", "score"]
        await press(pilot, "left", "p")
        assert screen.position == 1
        assert screen.query_one(TensorPane).grid.row(0, 0, 2) == [  # type: ignore[union-attr]
            pytest.approx(float(torch.dot(INPUTS[0], INPUTS[0])), abs=1e-6),
            None,
        ]


async def test_jumps_to_the_end_of_the_loop_the_end_and_the_start() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await press(pilot, "right", "e")
        step = screen.session.stepper.get(screen.position)  # type: ignore[union-attr]
        assert isinstance(step, Stage) and step.name == "scores"
        grid = screen.query_one(TensorPane).grid
        assert isinstance(grid, TensorGrid)
        # Seed 001: the score of "Your" with "journey" is 0.9544.
        assert grid.row(0, 1, 2)[0] == pytest.approx(0.9544, abs=5e-5)
        await press(pilot, "end")
        last = screen.session.stepper.get(screen.position)  # type: ignore[union-attr]
        assert isinstance(last, Stage) and last.name == "weights"
        assert screen.session.stepper.finished  # type: ignore[union-attr]
        await press(pilot, "right")  # past the end: stays
        assert screen.position == screen.session.stepper.total - 1  # type: ignore[union-attr,operator]
        await press(pilot, "home")
        assert screen.position == 0


async def test_clicking_the_timeline_jumps_to_a_stage() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        timeline = screen.query_one("#timeline", Timeline)
        item = next(w for w in timeline.query(TimelineItem) if w.key == "weights")
        await pilot.click(item)
        await settle(pilot)
        step = screen.session.stepper.get(screen.position)  # type: ignore[union-attr]
        assert isinstance(step, Stage) and step.name == "weights"
        assert timeline.current == "weights"
        # The weights stage has two tensors: both are on screen; t moves the keys to the next.
        pane = screen.query_one(TensorPane)
        assert pane_names(app) == ["weights", "scores"]
        views = [view for view in pane.views if view.display]
        assert [view.grid.name for view in views] == ["weights", "scores"]  # type: ignore[union-attr]
        await press(pilot, "t")
        assert app.focused is views[0]
        await press(pilot, "t")
        assert app.focused is views[1]


async def test_help_overlay_lists_the_keys() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        described = dict((d, k) for k, d in help_screen.keys)
        assert "→" in described["Next"] and "n" in described["Next"]
        assert "End of loop" in described and "Quit" in described
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ExploreScreen)


async def test_keys_can_be_remapped_by_binding_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTN_KEYMAP", "attn.next=j;attn.previous=k")
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await press(pilot, "j", "j", "right")
        assert screen.position == 2  # right no longer steps
        await press(pilot, "k")
        assert screen.position == 1
        assert [n for n in app._notifications if n.title == "Keys"] == []  # nothing misspelt


async def test_a_misspelt_binding_id_gets_one_line_with_a_did_you_mean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATTN_KEYMAP", "attn.nxt=j;attn.previous=k;attn.start")
    app = explore()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert warnings == [
            "ATTN_KEYMAP: no key binding has the id 'attn.nxt' (did you mean 'attn.next'?); "
            "it is ignored",
            "ATTN_KEYMAP: 'attn.start' is not ID=KEYS (e.g. attn.next=j,right); it is ignored",
        ]
        # The rest of the keymap still works, and the misspelt one changed nothing.
        screen = screen_of(app)
        await press(pilot, "right", "right", "k")
        assert screen.position == 1
        await press(pilot, "j")
        assert screen.position == 1


async def test_auto_play_steps_on_each_tick_and_changes_speed() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        speed = screen.speed
        await press(pilot, "plus")
        assert screen.speed == speed + 1
        await press(pilot, "minus", "minus")
        assert screen.speed == speed - 1
        await press(pilot, "a")
        assert screen.playing
        position = screen.position
        screen._tick()  # what the timer does, without waiting for it
        assert screen.position == position + 1
        await press(pilot, "a")
        assert not screen.playing


async def test_a_failing_variant_shows_its_error_in_place_of_the_step_and_q_quits() -> None:
    app = explore("broken")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await press(pilot, "right")
        # No pop-up: the step that failed shows the error where its tensors would be.
        assert app.screen is screen and screen.position == 1
        pane = screen.query_one(TensorPane)
        assert pane.has_class("-error") and pane.border_title == "error"
        # Author and plugin text is literal: the brackets are not markup.
        assert screen.failure is not None and "fails on purpose [at stage two]" in screen.failure
        assert "The variant stopped with an error" in text_of(app, "#narration")
        assert "faulty.py:" in screen.failure  # the plugin line, also marked in the source pane
        await press(pilot, "left")
        assert screen.position == 0 and screen.failure is None and not pane.has_class("-error")
        await press(pilot, "right", "right")  # back on the error; a second → stays there
        assert screen.position == 1 and screen.failure is not None
        await pilot.press("q")
        await pilot.pause()
    assert app.exit_status == 3  # a plugin failed, as on the command line


async def test_q_quits_from_an_error_pop_up_too() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.show_error("Something", "went wrong")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


async def test_an_unknown_variant_is_reported_in_the_app() -> None:
    app = explore("no-such-variant")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, attribute="failure")
        await pilot.pause()
        screen = screen_of(app)
        assert screen.failure is not None
        assert "unknown variant 'no-such-variant'" in screen.failure
        assert "Could not run the variant." in text_of(app, "#narration")


async def test_plugin_text_with_square_brackets_is_shown_literally() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "Token embeddings [literal brackets]" in text_of(app, "#narration")


@pytest.mark.parametrize(("width", "height"), [(40, 12), (80, 24), (250, 70)])
async def test_any_size_works_and_live_resizing_keeps_the_step(width: int, height: int) -> None:
    app = explore()
    async with app.run_test(size=(width, height)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await press(pilot, "right", "right")
        assert screen.has_class("-narrow") == (width < 100)
        assert screen.has_class("-short") == (height < 24)
        for size in ((40, 12), (250, 70), (width, height)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            assert screen.position == 2
            assert screen.has_class("-narrow") == (size[0] < 100)
        view = screen.query_one("#tensor-view")
        assert view.size.width > 0 and view.size.height > 0


async def test_the_palette_offers_stages_and_variants() -> None:
    app = explore()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        titles = [command.title for command in screen.palette_commands()]
        assert "Go to stage: weights" in titles
        assert "Explore variant: naive-loop" in [c.title for c in app.palette_commands()]
        await pilot.press("ctrl+p")
        await pilot.pause()
        for key in "stage: weights":
            await pilot.press("space" if key == " " else key)
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        step = screen.session.stepper.get(screen.position)  # type: ignore[union-attr]
        assert isinstance(step, Stage) and step.name == "weights"


async def test_a_stage_that_is_not_a_tensor_is_a_plugin_error_on_screen() -> None:
    # The tracer refuses the yield where it happens, so the app shows the plugin's
    # one-line error (with its file:line) instead of drawing something it cannot.
    app = explore("odd")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, attribute="failure")
        failure = screen_of(app).failure
        assert failure is not None
        assert "tensor 'inputs' is a list; yield a torch tensor" in failure


async def test_quitting_after_a_failed_start_exits_with_the_error_status() -> None:
    app = explore("no-such-variant")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, attribute="failure")
        await pilot.press("q")
    assert app.exit_status == 2  # a usage error, as on the command line


async def test_q_quits_while_a_variant_is_still_computing_a_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = tmp_path / "release"
    monkeypatch.setenv("ATTN_TEST_RELEASE", str(release))
    app = explore("sleeps")
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = screen_of(app)
            # Not settle(): the prefetch of step 2 never finishes. Bounded generously: on a
            # loaded machine the first step took longer than the 10 s this once allowed.
            for _ in range(3000):
                await pilot.pause(0.01)
                if screen.session is not None and screen.position == 0:
                    break
            assert screen.session is not None and screen.position == 0, "step 1 never shown"
            await pilot.press("right")  # the variant is asleep inside its second step
            for _ in range(60):
                await pilot.pause(0.01)
            # The UI thread is free: it still answers, and says what it is waiting for.
            assert screen.busy and screen.position == 0
            assert "Running to step 2" in text_of(app, "#narration")
            await pilot.press("q")
        # The app closed while the variant was still inside that step: q did not wait for it.
        # (At most 1: a stepper that was reviving its run when q came may be back at 0.)
        assert screen.session is not None and screen.session.stepper.produced <= 1
        assert app.return_code == 0
    finally:
        release.write_text("go", encoding="utf-8")


async def test_a_loop_says_how_many_pairs_it_has_only_once_that_is_certain() -> None:
    pairs = len(load_inputs("your-journey").tokens) ** 2  # every (query, key) pair of 6 tokens
    app = explore()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right", "right")  # the loop's second pair; its end not yet run
        narration = text_of(app, "#narration")
        assert "pair 2" in narration and "pair 2 of" not in narration
        await press(pilot, "e")  # runs to the stage that ends the loop
        assert isinstance(screen_of(app).session.stepper.get(screen_of(app).position), Stage)  # type: ignore[union-attr]
        await press(pilot, "left")  # back on the loop's last pair
        assert f"pair {pairs} of {pairs}" in text_of(app, "#narration")
        await press(pilot, "home", "right", "right")  # the count stays known going back
        assert f"pair 2 of {pairs}" in text_of(app, "#narration")


async def test_a_loop_that_failed_part_way_gives_no_count() -> None:
    app = explore("fails-in-loop")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right", "right", "right")  # the third pair never comes
        await settle(pilot, attribute="failure")
        assert "The variant stopped with an error" in text_of(app, "#narration")
        await press(pilot, "left")  # the last pair that ran
        # The trace ended, but by failing inside the loop: two pairs ran, not "2 of 2".
        assert screen_of(app).session.stepper.total is not None  # type: ignore[union-attr]
        narration = text_of(app, "#narration")
        assert "pair 2" in narration and "pair 2 of" not in narration


def footer_descriptions(app: TracerApp) -> list[str]:
    """What the footer offers: the shown bindings that are enabled now."""
    active = app.screen.active_bindings.values()
    return [item.binding.description for item in active if item.enabled and item.binding.show]


async def test_the_footer_offers_pause_while_auto_play_runs() -> None:
    app = explore()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        assert "Play" in footer_descriptions(app) and "Pause" not in footer_descriptions(app)
        await press(pilot, "a")
        assert screen.playing
        assert "Pause" in footer_descriptions(app) and "Play" not in footer_descriptions(app)
        await press(pilot, "a")  # the same key pauses
        assert not screen.playing
        assert "Play" in footer_descriptions(app) and "Pause" not in footer_descriptions(app)


async def test_a_remapped_play_key_also_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTN_KEYMAP", "attn.autoplay=x")
    app = explore()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await press(pilot, "x")
        assert screen.playing and "Pause" in footer_descriptions(app)
        await press(pilot, "x")
        assert not screen.playing and "Play" in footer_descriptions(app)


async def test_stepping_onto_the_last_step_says_how_many_steps_there_are() -> None:
    app = explore()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        stepper = screen.session.stepper  # type: ignore[union-attr]
        assert "step 1 of ?" in text_of(app, "#narration")  # nothing has run to the end yet
        for _ in range(100):  # → only, never End: the end is found by stepping onto it
            before = screen.position
            await press(pilot, "right")
            if screen.position == before:
                break
        assert stepper.total is not None and screen.position == stepper.total - 1
        narration = text_of(app, "#narration")
        assert f"step {stepper.total} of {stepper.total}" in narration
        assert "of ?" not in narration
        await press(pilot, "left")  # and it stays known going back
        assert f"step {stepper.total - 1} of {stepper.total}" in text_of(app, "#narration")


# The trace warns too (what `attn explore` prints after the app closes); here the app's note counts.
@pytest.mark.filterwarnings("ignore::tracer.tracing.trace.PaddingIgnored")
async def test_padding_the_variant_never_read_is_said_once_the_run_ends(tmp_path: Path) -> None:
    padded = tmp_path / "padded.yaml"
    padded.write_text(
        "tokens: [the, cat, pad]\nembeddings: [[1, 0], [0, 1], [0, 0]]\n"
        "padding: [false, false, true]\n"
    )
    app = explore("vectorized", inputs=str(padded))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        said = [n for n in app._notifications if n.title == "Padding not used"]
        assert said == []  # not before the run has ended: a later step may still read it
        await press(pilot, "end")
        await settle(pilot)
        said = [n.message for n in app._notifications if n.title == "Padding not used"]
        assert len(said) == 1 and "token 2 ('pad')" in said[0] and "vectorized" in said[0]
