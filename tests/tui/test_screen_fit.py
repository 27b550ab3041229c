"""What a step names is on screen, whole (issue 32, items 4 and 5), driven by Textual's pilot.

Each test starts the real app at a learner's terminal size and reads what the compositor
draws: the token letters and ids lesson 13's captions cite, every table lesson 10's loop
names, titles and buttons never cut mid-word, whole numbers printed whole. Expected numbers
come from the captions' own rule (A is 0, ..., T is 19) or from torch.
"""

from __future__ import annotations

import re

import torch
from rich.cells import cell_len
from textual.app import App
from textual.widgets import Button

from tracer.lessons.loader import shipped_dir
from tracer.render.labels import distinct_tokens
from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.modals import LessonEndScreen
from tracer.tui.timeline import Timeline

from .conftest import LESSON, PLUGINS, settle

LETTERS = list("RJOSBIMLNG" * 2)


def screen_lines(app: App[object]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def pane_text(app: App[object]) -> str:
    """What the first table of the tensor pane draws (its title and border left out)."""
    view = app.screen.pane.view
    region = view.region
    lines = screen_lines(app)[region.y : region.bottom]
    return "\n".join(line[region.x : region.right] for line in lines)


async def go(app: App[object], pilot: object, step: int) -> LessonScreen:
    screen = app.screen
    assert isinstance(screen, LessonScreen)
    screen.go_to_step(step)
    await settle(pilot)  # type: ignore[arg-type]
    for _ in range(3):
        await pilot.pause()  # type: ignore[attr-defined]
    return screen


def lesson(prefix: str) -> App[object]:
    return make_lesson_app(next(shipped_dir().glob(f"{prefix}_*.yaml")), resume=False)


async def test_lesson_13_shows_the_letters_and_ids_its_captions_cite() -> None:
    app = lesson("13")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await go(app, pilot, 1)  # "as the ids the model reads (A is 0, B is 1, ..., T is 19)"
        drawn = pane_text(app)
        labels = distinct_tokens(LETTERS)
        ids = [ord(letter) - ord("A") for letter in LETTERS]
        # Every position's label and its id, in order, block after block.
        found_labels = [w for w in drawn.split() if re.fullmatch(r"[A-T]@\d+", w)]
        assert found_labels == list(labels)
        numbers = [int(w) for line in drawn.splitlines() for w in line.split() if w.isdigit()]
        assert numbers == ids
        assert "." not in drawn  # ids are whole: no "17.0000"

        screen = await go(app, pilot, 15)  # the predicted ids: "predicts 17, R" for the last G
        drawn = pane_text(app)
        assert "G@19" in drawn
        last = drawn.split("G@19")[1]
        assert re.search(r"\b17\b", last), "the last G's prediction is not on screen"

        # An overview states the range of the cells, not only of the block means.
        await go(app, pilot, 4)
        view = screen.pane.view
        assert view.mode == "overview" and view.grid is not None
        low, high = view.grid.shown_range() or (0.0, 0.0)
        legend = pane_text(app).splitlines()[0]
        assert f"cells {view.grid.format(low)} to {view.grid.format(high)}" in legend


async def test_every_table_lesson_10s_loop_names_is_in_sight() -> None:
    app = lesson("10")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await go(app, pilot, 6)  # the loop, after the rescale quiz
        assert screen.session is not None
        caption = screen.session.view().step.text
        pane = screen.pane
        assert {"m", "l", "O", "output", "rescale"} <= set(pane.tensor_names)
        assert pane.hidden_tables() == []
        assert "O / l" in caption and " l, O " in caption
    async with lesson("10").run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await go(pilot.app, pilot, 6)
        # The caption whole at 80×24: its box's lines, read in order, are the caption.
        box = screen.query_one("#caption").region
        lines = screen_lines(pilot.app)[box.y : box.bottom]
        drawn = " ".join(line[box.x : box.right].strip("│▁▂▃▄▅▆▇█ ") for line in lines)
        assert " ".join(caption.split()) in " ".join(drawn.split())


async def test_the_timeline_and_the_end_dialog_never_cut_a_word() -> None:
    app = lesson("13")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        words = {w for item in timeline.items for w in f"✓ {item.label}".split()}
        for step in (0, 8, 16):
            await go(app, pilot, step)
            for _ in range(10):
                await pilot.pause()
            region = timeline.region
            line = screen_lines(app)[region.y][region.x : region.right]
            drawn = set(line.replace("‹", " ").replace("more ›", " ").split())
            assert drawn <= words | {w for w in drawn if w.isdigit()}, line
    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        title = "A next lesson whose title is far longer than a button beside two others"
        await app.push_screen(LessonEndScreen("Here", "Done.", title))
        await pilot.pause()
        end = app.screen
        for button in end.query(Button):
            label = str(button.label)
            assert button.content_region.width >= cell_len(label), label
        shown = " ".join(screen_lines(app))
        assert all(word in shown for word in title.split())  # named whole, on its own line


async def test_a_show_step_names_its_tensor_and_prints_whole_numbers_whole() -> None:
    app = lesson("05")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await go(app, pilot, 5)  # the softmax weights with the future zeroed
        pane = screen.pane
        assert pane.full_title.startswith("renormalized.zeroed · ")
        assert "softmax" not in pane.detail.plain  # the renormalising formula is not zeroed's
        # The causal mask, after the quiz that asks which cells it hides: answered first
        # (the cells above the diagonal, by index), else the walk keeps the mask off screen.
        screen = await go(app, pilot, 2)
        assert screen.session is not None
        above = "; ".join(f"{i},{j}" for i in range(6) for j in range(i + 1, 6))
        assert screen.session.answer(above).right is True
        screen = await go(app, pilot, 3)
        grid = pane.view.grid
        assert grid is not None and grid.whole
        mask = torch.ones(6, 6).triu(1)  # 1 = hidden from the query
        rows = [line.split() for line in pane_text(app).splitlines()[1:7]]
        assert [[int(v) for v in row[-6:]] for row in rows] == mask.int().tolist()


async def test_a_narrow_loop_pane_says_what_question_mark_means_in_whole_words() -> None:
    """Lesson 10's loop, at its last tile with the m and l quizzes open: the narrow pane of
    tensors hides journey's m and l and says what "?" means in the longest words that fit,
    never cut."""
    from tracer.tui.tensor_pane import HIDDEN_MARK, HIDDEN_MARK_SHORT

    app = lesson("10")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await go(app, pilot, 6)
        await pilot.press("e")  # the loop's last sub-step: the tile where "one" raises m
        await settle(pilot)
        pane = app.screen.pane
        assert pane.marks_hidden
        room = pane.size.width - 4
        fitting = [m for m in (HIDDEN_MARK, *HIDDEN_MARK_SHORT) if len(m) <= room]
        assert fitting and pane.full_subtitle.endswith(fitting[0])
