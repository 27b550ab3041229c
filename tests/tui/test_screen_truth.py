"""What the learner's screen must get right (issue "The learner's screen"), one failure each.

Numbers come from torch (softmax, dot products) and the course's inputs; what
is asserted is what the widgets hold and draw, driven by Textual's pilot.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from textual.color import Color
from textual.pilot import Pilot

from tracer.inputs import load_inputs
from tracer.tracing.runner import TraceOptions
from tracer.tui.app import TracerApp
from tracer.tui.explore_screen import ExploreScreen
from tracer.tui.grid import TensorGrid
from tracer.tui.launch import make_explore_app, make_lesson_app
from tracer.tui.lesson_screen import LessonScreen, Position
from tracer.tui.modals import LessonEndScreen
from tracer.tui.quiz_view import QuizView
from tracer.tui.source_view import SourceView
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.text_pane import TextPane
from tracer.variant import Accumulate, Dot, SubStep

from .conftest import LESSON, PLUGINS, press, settle

INPUTS = torch.tensor(load_inputs("your-journey").embeddings)


def lesson_app(path: Path = LESSON) -> TracerApp:
    return make_lesson_app(path, resume=False, plugin_dirs=[str(PLUGINS)])


def explore(variant: str, **options: object) -> TracerApp:
    return make_explore_app(variant, TraceOptions(**options), [str(PLUGINS)])  # type: ignore[arg-type]


def lesson_screen(app: TracerApp) -> LessonScreen:
    assert isinstance(app.screen, LessonScreen)
    return app.screen


async def at_step(pilot: Pilot[int], number: int) -> LessonScreen:
    """The loaded lesson screen, moved to step ``number`` and settled there."""
    await settle(pilot)
    screen = lesson_screen(pilot.app)
    screen.go_to_step(number)
    await settle(pilot)
    return screen


def shown(pane: TensorPane) -> list[str]:
    return [view.grid.name for view in pane.views if view.display and view.grid is not None]


async def test_a_loop_without_a_declared_equation_writes_no_arithmetic() -> None:
    app = explore("no-equation")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right")
        pane = app.screen.query_one(TensorPane)
        # Its tensors, each as a table; no matrix drawn from a guess, no products written.
        assert shown(pane) == ["weight", "value", "partial"]
        detail = str(pane.query_one("#tensor-detail", TextPane).render())
        assert "×" not in detail and "=" not in detail


async def test_a_declared_accumulation_is_written_out_with_its_own_numbers() -> None:
    app = explore("accumulates")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right", "right")  # the second iteration: after = before + 0.5 x1
        pane = app.screen.query_one(TensorPane)
        detail = str(pane.query_one("#tensor-detail", TextPane).render())
        assert "after = before + weight × value" in detail
        before = 0.5 * INPUTS[0]
        after = before + 0.5 * INPUTS[1]
        assert f"{before[0]:.4f} + 0.5000×{INPUTS[1][0]:.4f} = {after[0]:.4f}" in detail


def test_an_equation_that_does_not_hold_is_not_written_out() -> None:
    from tracer.tui.equation_text import equation_text

    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    true = SubStep(
        "s", (0, 0), {"a": a, "b": b, "r": torch.tensor(11.0)}, equation=Dot("a", "b", "r")
    )
    false = SubStep(
        "s", (0, 0), {"a": a, "b": b, "r": torch.tensor(12.0)}, equation=Dot("a", "b", "r")
    )
    missing = SubStep("s", (0, 0), {"a": a}, equation=Accumulate("x", "w", "a", "y"))
    assert "1.0000×3.0000 + 2.0000×4.0000 = 11.0000" in equation_text(true).plain  # type: ignore[union-attr]
    for step in (false, missing):
        text = equation_text(step)
        assert text is not None and "×" not in text.plain and "does not" in text.plain


async def test_opening_a_lesson_from_inside_a_lesson_replaces_it() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        first = lesson_screen(app)
        app.open_lesson(LESSON)  # what ctrl+p → "Open lesson" does
        await settle(pilot)
        second = lesson_screen(app)
        assert second is not first and second.session is not None
        app.open_lesson(LESSON)
        await settle(pilot)
        assert len(app.screen_stack) == 2  # the first screen and one lesson: never a pile
        assert app.return_code is None  # still running: no DuplicateIds crash


async def test_the_end_of_a_lesson_sums_it_up_and_offers_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "lessons"
    folder.mkdir()
    first, following = folder / "a.yaml", folder / "b.yaml"
    first.write_text(
        "title: First\nsummary: s\ninputs: your-journey\nsteps:\n"
        "  - quiz: {id: q, question: 'Pick one', choices: [x, y], answer: y}\n"
        "  - checkpoint: {title: Done, points: [Scores are dot products.]}\n",
        encoding="utf-8",
    )
    following.write_text(
        "title: Second\nsummary: s\nsteps:\n  - narration: Hello.\n", encoding="utf-8"
    )
    empty = tmp_path / "none"
    empty.mkdir()
    monkeypatch.setattr("tracer.lessons.loader.shipped_dir", lambda: empty)
    app = make_lesson_app(first, resume=False, lesson_dirs=[str(folder)])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "2", "right", "right")  # answer right, go on, then past the end
        end = app.screen
        assert isinstance(end, LessonEndScreen)
        assert "Quizzes: 1 of 1 right (1 answered)." in end.summary
        assert "• Scores are dot products." in end.summary
        assert end.next_title is not None and "Second" in end.next_title
        await press(pilot, "n")
        screen = lesson_screen(app)
        assert screen.session is not None and screen.session.lesson.title == "Second"


async def test_auto_play_stops_at_a_quiz() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await at_step(pilot, 3)
        screen.action_autoplay()
        screen._tick()  # what the auto-play timer does
        await settle(pilot)
        assert screen.position == Position(4, 0)
        quiz = screen.query_one(QuizView).quiz
        assert quiz is not None and quiz.id == "best"
        assert not screen.playing  # the timer is gone: the quiz waits for its answer


async def test_a_loop_says_which_pair_it_is_on_and_how_many_there_are() -> None:
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 2)
        await press(pilot, "right")
        position = str(screen.query_one("#loop-position", TextPane).render())
        assert position.startswith("pair 2 of 8")
        # 0-based here, 1-based in the course: journey is x_2 there.
        assert "journey = x[1] here, x_2 in the course" in position


async def test_a_loop_keeps_one_layout_from_its_first_pair_to_its_last() -> None:
    """The position text is held at the loop's tallest from the first pair on.

    One line more or less moves the source below it and costs a second layout
    (and frame); measured from its first sub-step, where the text had only just
    become visible, it used to grow over the first pairs.
    """
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 2)
        where = screen.query_one("#loop-position", TextPane)
        source = screen.query_one("#source")
        seen = []
        for _ in range(8):
            assert where.line_count <= where.size.height  # held, never clipped
            seen.append((where.size.height, source.region))
            await press(pilot, "right")
        assert screen.position.step == 3  # all eight pairs were shown
        assert len(set(seen)) == 1, seen


async def test_a_show_step_without_a_tensor_shows_every_tensor_of_the_stage() -> None:
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 8)
        assert shown(screen.pane) == ["weights", "weights.scores"]
        scores = INPUTS @ INPUTS[1]
        views = [view for view in screen.pane.views if view.display]
        assert views[0].grid.row(0, 0, 6) == pytest.approx(  # type: ignore[union-attr]
            torch.softmax(scores, 0).tolist(), abs=1e-6
        )
        assert views[1].grid.row(0, 0, 6) == pytest.approx(scores.tolist(), abs=1e-6)  # type: ignore[union-attr]


async def test_a_derived_value_is_titled_as_what_it_is() -> None:
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 7)
        pane = screen.pane
        assert "Worked out by the lesson from scores, after the run" in str(pane.border_title)
        detail = str(pane.query_one("#tensor-detail", TextPane).render())
        assert "softmax along each row" in detail
        assert "X Xᵀ" not in detail  # the stage's formula is not this value's formula
        scores = INPUTS @ INPUTS.T
        assert pane.grid is not None
        assert pane.grid.row(2, 0, 6) == pytest.approx(
            torch.softmax(scores, -1)[2].tolist(), abs=1e-6
        )


async def test_a_quiz_keeps_its_table_on_screen_with_the_answer_hidden() -> None:
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 9)
        assert screen.query_one(QuizView).display
        assert shown(screen.pane) == ["weights", "weights.scores"]
        assert screen.pane.grid is not None
        weights, scores = (view for view in screen.pane.views if view.display)
        assert weights.grid is not None and scores.grid is not None
        # The answer is in the scores (the second table), and only there; (0, 0), Your with
        # journey, is the answer of step 6's quiz, not answered yet (skipped): hidden too.
        assert scores.grid.highlight.hidden == frozenset({(0, 1), (0, 0)})
        assert weights.grid.highlight.hidden == frozenset()
        strip = scores.render_line(1)
        assert "?" in strip.text and "1.4950" not in strip.text
        await press(pilot, "1", "full_stop", "4", "9", "5", "enter")
        _, scores = (view for view in screen.pane.views if view.display)
        assert scores.grid is not None
        assert scores.grid.highlight.hidden == frozenset({(0, 0)})  # answered: shown again


async def test_the_source_is_never_cut_off_and_marks_what_made_the_tensor() -> None:
    app = lesson_app()
    async with app.run_test(size=(80, 40)) as pilot:
        screen = await at_step(pilot, 1)
        source = screen.query_one("#source", SourceView)
        assert source.path is not None
        lines = Path(source.path).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            pieces = "".join(row.text.plain for row in source.rows if row.number == number)
            assert pieces == line  # wrapped, every character kept
        # scores[i, j] = torch.dot(...) filled the table on screen.
        (made,) = [n for n in source.produced]
        assert lines[made - 1].strip().startswith("scores[i, j] = torch.dot(")
        # The tracer's plumbing is dimmed; the torch code is not.
        yield_row = next(r for r in source.rows if lines[r.number - 1].strip() == "yield stage(")
        assert any("dim" in str(span.style) for span in yield_row.text.spans)
        torch_row = next(r for r in source.rows if r.number == made and r.first)
        assert not any("dim" in str(span.style) for span in torch_row.text.spans)


async def test_the_drawn_source_marks_exactly_the_lines_of_each_step() -> None:
    """Drawn lines are cached across steps: none keeps the marker of a step before."""
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        source = screen.query_one("#source", SourceView)
        screen.go_to_step(1)
        await settle(pilot)
        keys = ["right"] * 9 + ["left"] * 9
        checked = 0
        for key in keys:
            if source.display and source.size.height and source.marked:
                top = source.scroll_offset.y
                for y in range(min(source.size.height, len(source.rows) - top)):
                    row = source.rows[top + y]
                    marker = source.render_line(y).text[0]
                    expected = (
                        "◆"
                        if row.number in source.produced
                        else "▶"
                        if row.number in source.marked
                        else " "
                    )
                    assert marker == expected, (screen.position, row.number)
                checked += 1
            await press(pilot, key)
        assert checked >= 8  # show and loop steps, forwards and back


async def test_labels_and_marked_lines_are_readable_in_every_theme() -> None:
    # One app, the theme switched as the palette's "Change theme" does, before each check.
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for theme in ["textual-light", "solarized-light", "textual-dark"]:
            screen = lesson_screen(app)
            screen.go_to_step(0)
            await settle(pilot)
            app.theme = theme
            screen.go_to_step(1)
            await settle(pilot)
            assert app.current_theme.name == theme
            view = screen.pane.view
            label = view._style("label")
            assert label.color is not None and label.bgcolor is not None, theme
            fg, bg = Color.from_rich_color(label.color), Color.from_rich_color(label.bgcolor)
            assert contrast(fg, bg) >= 3.0, theme
            source = screen.query_one("#source", SourceView)
            marked_row = next(n for n, r in enumerate(source.rows) if r.number in source.marked)
            source.scroll_to(0, marked_row, animate=False, immediate=True)
            strip = source.render_line(0)
            gutter = next(iter(strip))
            assert gutter.style is not None and gutter.style.bgcolor is not None, theme
            tint = Color.from_rich_color(gutter.style.bgcolor)
            assert tint != source._colours[0], theme  # type: ignore[index]
            assert contrast(Color.from_rich_color(gutter.style.color), tint) >= 3.0, theme  # type: ignore[arg-type]


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio."""

    def luminance(c: Color) -> float:
        def channel(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_two_hundred_tokens_get_an_overview_with_the_cell_marked(tmp_path: Path) -> None:
    inputs = tmp_path / "long.yaml"
    rows = [[math.sin(i + k) for k in range(3)] for i in range(200)]
    inputs.write_text(
        "tokens: [" + ", ".join(f"t{i}" for i in range(200)) + "]\n"
        "embeddings:\n" + "".join(f"  - [{', '.join(f'{v:.3f}' for v in r)}]\n" for r in rows),
        encoding="utf-8",
    )
    from tracer.inputs import load_inputs as load

    app = explore("tiny", inputs=load(str(inputs)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        await press(pilot, "right", "right", "right")  # inside the loop: cell (0, 2)
        view = screen.query_one(TensorPane).view
        assert view.mode == "overview"
        header = view.render_line(0).text.rstrip()
        # What a block is and the range it spans: the means, and the cells they average.
        assert header.startswith(("overview · ", "means of ≤")) and " to " in header
        assert "(cells " in header
        assert "…" not in header  # as much as fits, whole: a cut-off range would mislead
        assert "◆" in view.render_line(1).text  # the current cell, marked
        footer_keys = {key for key, b in screen.active_bindings.items() if b.binding.show}
        assert {"z", "w"} <= footer_keys
        await press(pilot, "z")
        assert view.mode == "numbers"
        await press(pilot, "z")
        assert view.mode == "overview"


async def test_with_no_color_a_large_table_shows_its_numbers(tmp_path: Path) -> None:
    long = Path(__file__).parent / "inputs" / "tokens200.yaml"
    from tracer.inputs import load_inputs as load

    inputs = load(str(long))
    x = torch.tensor(inputs.embeddings)
    app = explore("tiny", inputs=inputs)
    app.no_color = True  # what NO_COLOR in the environment sets
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "right", "right")
        view = app.screen.query_one(TensorPane).view
        assert view.mode == "numbers"
        first_row = view.render_line(1).text  # t0's row of the scores so far
        assert f"{float(torch.dot(x[0], x[0])):.4f}" in first_row
        # The cell being computed is marked by more than colour: underlined and bold.
        current = view._style("current")
        assert current.underline and current.bold


async def test_the_token_view_draws_one_querys_weight_to_each_key() -> None:
    app = explore("tiny", query=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        await press(pilot, "end")
        view = screen.query_one(TensorPane).view
        assert isinstance(view.grid, TensorGrid) and view.grid.is_weights()
        await press(pilot, "w")
        assert view.mode == "tokens"
        weights = torch.softmax(INPUTS @ INPUTS[1], 0)
        line = view.render_line(3).text  # key "starts"
        assert "starts" in line and f"{float(weights[2]):.4f}" in line and "█" in line


async def test_a_plugin_calling_sys_exit_is_an_error_on_screen_not_an_exit() -> None:
    app = explore("exits")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "right")
        assert app.is_running
        await press(pilot, "escape", "q")
    assert app.exit_status == 3


async def test_the_app_owns_one_plugin_host_and_one_progress_store() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        first = lesson_screen(app)
        app.open_explorer("tiny")
        await settle(pilot)
        explorer = app.screen
        assert isinstance(explorer, ExploreScreen) and explorer.session is not None
        assert first.session is not None
        assert first.session.host is app.plugin_host()
        assert first.store is app.progress_store()
        assert explorer.session.variant is app.plugin_host().variant("tiny")
