"""A quiz shows its own table in the app, and nothing on screen gives its answer away."""

from __future__ import annotations

from pathlib import Path

import torch
from textual.pilot import Pilot

from tracer.inputs import load_inputs
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.quiz_view import QuizView
from tracer.tui.tensor_pane import TensorPane

from .conftest import app_with, press, settle

INPUTS = torch.tensor(load_inputs("your-journey").embeddings)
TOKENS = ("Your", "journey", "starts", "with", "one", "step")


async def at_step(pilot: Pilot[int], number: int) -> LessonScreen:
    """The lesson screen at 1-based step ``number``, settled."""
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, LessonScreen)
    screen.go_to_step(number - 1)
    await settle(pilot)
    return screen


def grids(pane: TensorPane) -> list[object]:
    return [view.grid for view in pane.views if view.display and view.grid is not None]


async def test_a_quiz_with_show_draws_its_own_table_not_an_earlier_steps() -> None:
    app = make_lesson_app("01_dot_products", resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 4)  # "work out the dot product of Your and journey"
        assert screen.query_one(QuizView).display
        (grid,) = grids(screen.pane)
        # The embeddings themselves, from the inputs file, not a table of scores.
        assert grid.rows == 6 and grid.columns == INPUTS.shape[1]  # type: ignore[attr-defined]
        for row in range(6):
            assert grid.row(row, 0, 3) == INPUTS[row].tolist()  # type: ignore[attr-defined]


async def test_a_cells_quiz_draws_the_table_its_cells_are_chosen_from() -> None:
    app = make_lesson_app("05_causal_masking", resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 3)  # "which cells of the scaled scores will the mask hide?"
        (grid,) = grids(screen.pane)
        assert grid.name.startswith("scaled")  # type: ignore[attr-defined]
        # The scaled scores, not the mask, whose 1s would be the answer.
        values = [grid.row(r, 0, 6) for r in range(6)]  # type: ignore[attr-defined]
        assert any(v not in (0.0, 1.0) for row in values for v in row)


async def test_a_quiz_hides_its_answer_and_the_symmetric_twin() -> None:
    app = make_lesson_app("01_dot_products", resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 12)  # "what is the score of one with step?"
        one, step = TOKENS.index("one"), TOKENS.index("step")
        (grid,) = grids(screen.pane)
        hidden = grid.highlight.hidden  # type: ignore[attr-defined]
        assert (one, step) in hidden and (step, one) in hidden
        answer = f"{float(INPUTS[one] @ INPUTS[step]):.4f}"
        for line in range(grid.rows + 1):  # type: ignore[attr-defined]
            assert answer not in screen.pane.view.render_line(line).text
        await press(pilot, *[("full_stop" if ch == "." else ch) for ch in answer], "enter")
        (grid,) = grids(screen.pane)
        # Answered: its cells show; the next quiz's (one with with), not answered, stay hidden.
        hidden = grid.highlight.hidden  # type: ignore[attr-defined]
        assert not {(one, step), (step, one)} & hidden
        with_ = TOKENS.index("with")
        assert {(one, with_), (with_, one)} <= hidden


async def test_a_borrowed_table_is_titled_by_its_name_not_a_stage_title_stating_the_answer() -> (
    None
):
    """Lesson 09's work quizzes borrow the table of the step before them; the kv-cache stage is
    titled "Multiply-adds to decode 6 tokens: N with the cache, M recomputing ...", which is
    both answers. The app titles the borrowed table by its name, as --plain and exports do."""
    from tracer.lessons.hiding import quiz_tables
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import load_lesson, resolve_lesson
    from tracer.lessons.views import quiz_at
    from tracer.plugin_host import PluginHost

    host = PluginHost(())
    lesson = load_lesson(resolve_lesson("09_kv_cache", ()), host)
    runner = LessonRunner(lesson, host)
    numbers = [
        n
        for n in range(len(lesson.steps))
        if (q := quiz_at(lesson, n)) and q.id and q.id.startswith("work-")
    ]
    assert len(numbers) == 2
    app = make_lesson_app("09_kv_cache", resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for number in numbers:
            answer = str(int(runner.answer(lesson.steps[number])))  # type: ignore[arg-type]
            (table,) = quiz_tables(lesson, runner, number).tables
            assert answer in table.resolved.stage.title  # what the title would have given away
            screen = await at_step(pilot, number + 1)
            assert screen.query_one(QuizView).display
            title = str(screen.pane.border_title)
            assert title.startswith(table.resolved.name) and answer not in title


async def test_a_borrowed_pair_of_tables_is_titled_by_both_names() -> None:
    """Lesson 10's m quiz borrows step 7's two tables (m and l): the pane names both."""
    from tracer.lessons.hiding import quiz_tables
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import load_lesson, resolve_lesson
    from tracer.lessons.views import quiz_at
    from tracer.plugin_host import PluginHost

    host = PluginHost(())
    lesson = load_lesson(resolve_lesson("10_online_softmax", ()), host)
    runner = LessonRunner(lesson, host)
    number = next(
        n for n in range(len(lesson.steps)) if quiz_at(lesson, n) and quiz_tables(
            lesson, runner, n).context is not None and len(quiz_tables(lesson, runner, n).tables) == 2
    )  # fmt: skip
    names = [table.resolved.name for table in quiz_tables(lesson, runner, number).tables]
    app = make_lesson_app("10_online_softmax", resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, number + 1)
        assert str(screen.pane.border_title) == ", ".join(names)
        assert [grid.name for grid in grids(screen.pane)] == names  # type: ignore[attr-defined]


async def test_a_quiz_with_two_tables_of_its_own_is_titled_by_their_names(tmp_path: Path) -> None:
    """Not by their stage's title: kv-cache's work stage is titled with both totals."""
    lesson = tmp_path / "two.yaml"
    lesson.write_text(
        "title: Two tables of its own\n"
        "summary: A quiz with a show table and a cells table.\n"
        "steps:\n"
        "  - quiz:\n"
        "      question: Which decoded tokens cost more than 30 multiply-adds with the cache?\n"
        "      show: {variant: kv-cache, stage: work, tensor: recompute}\n"
        "      cells: {variant: kv-cache, stage: work, tensor: cached}\n"
        "      answer: {variant: kv-cache, stage: work, tensor: cached, then: [{compare: '> 30'}]}\n"
        "      explanation: The later ones.\n",
        encoding="utf-8",
    )
    app = make_lesson_app(lesson, resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await at_step(pilot, 1)
        assert screen.query_one(QuizView).display
        title = str(screen.pane.border_title)
        assert title == "work.recompute, work.cached"
        assert "with the cache" not in title


async def test_the_overviews_range_leaves_out_the_cells_a_quiz_hides() -> None:
    """A quiz on a table's smallest and largest values hides both cells: the overview's
    range, its first line, must not print them (it would be the two answers)."""

    from tracer.render.text import format_number
    from tracer.tui.grid import Highlight, TensorGrid
    from tracer.tui.tensor_view import TensorView

    values = torch.tensor([[1.8373, 1.7], [1.5, 1.4], [1.3, 1.2554]])
    hidden = frozenset({(0, 0), (2, 1)})  # the first loss and the last, as lesson 11 asks

    app = app_with(TensorView)
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(TensorView)
        view.show(TensorGrid("loss", values, (), highlight=Highlight(hidden=hidden)))
        view.toggle_zoom()  # the overview
        await pilot.pause()
        assert view.mode == "overview"
        header = view.render_line(0).text
        shown = [float(values[r, c]) for r in range(3) for c in range(2) if (r, c) not in hidden]
        assert f"{format_number(min(shown))} to {format_number(max(shown))}" in header
        assert format_number(1.8373) not in header and format_number(1.2554) not in header
