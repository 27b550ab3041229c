"""The source pane keeps the files it drew: a lesson that goes back to a variant's file draws
it as a pane that had never drawn it would, from the lines it drew before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from tracer.tui.launch import make_lesson_app
from tracer.tui.source_view import SourceView

from .conftest import app_with, lesson_running, settle

TWO_FILES = """\
title: Two files
summary: Two variants' code, one after the other.
steps:
  - show: {variant: vectorized, stage: scores}
  - show: {variant: naive-loop, stage: scores}
  - show: {variant: vectorized, stage: weights}
"""


def drawn(source: SourceView) -> list[str]:
    return [source.render_line(y).text for y in range(source.size.height)]


async def test_a_file_shown_again_is_drawn_as_a_fresh_pane_draws_it(tmp_path: Path) -> None:
    lesson = tmp_path / "two_files.yaml"
    lesson.write_text(TWO_FILES, encoding="utf-8")
    app = make_lesson_app(lesson, resume=False)
    async with lesson_running(app) as (pilot, screen):
        source = screen.query_one("#source", SourceView)
        screen.go_to_step(0)
        await settle(pilot)
        first, width = source.path, source._wrapped_for
        screen.go_to_step(1)
        await settle(pilot)
        assert source.path != first  # another file: the first one is kept as drawn
        assert (first, width) in source._folds
        rows = source._folds[first, width].rows
        screen.go_to_step(0)  # the first file at its width again: not folded anew
        await settle(pilot)
        assert source.path == first and source.rows is rows
        screen.go_to_step(2)  # the first file again, other lines marked
        await settle(pilot)
        assert source.path == first
        kept_lines, kept_size, marked = drawn(source), source.virtual_size, source.marked
        produced, files = source._produced_name, source._files
        # The same file and marks in a pane that keeps nothing: drawn alike.
        source._forget_drawn()
        source.path = None
        source.marked = frozenset()
        source.show_file(first, tuple(marked), produced=produced, files=files)
        await settle(pilot)
        assert drawn(source) == kept_lines
        assert source.virtual_size == kept_size


async def test_folded_rows_drawn_from_whole_lines_read_as_the_file(tmp_path: Path) -> None:
    """Rows are cut from each line drawn whole: each row shows all of its piece within the
    pane's width, and read in order they are the file's text, for lines of wide characters
    (folded by cells: no character falls off a row's end) and dimmed plumbing too."""
    from rich.cells import cell_len

    code = (
        "def f(run):\n"
        "    total = " + " + ".join(f"value_{n}" for n in range(12)) + "\n"
        "    label = '" + "注意力" * 9 + "'  # wide characters\n"
        "    mixed = 'é' + '注' * 30 + 'x' * 20\n"
        "    yield run.focus(total)\n"
    )
    path = tmp_path / "wide.py"
    path.write_text(code, encoding="utf-8")

    app = app_with(lambda: SourceView(id="source"))
    async with app.run_test(size=(40, 30)) as pilot:
        source = app.query_one(SourceView)
        source.show_file(str(path), (2,))
        await settle(pilot)
        gutter = source._gutter()
        text_width = source._wrapped_for
        read: dict[int, str] = {}
        for y, row in enumerate(source.rows):
            piece = row.text.plain
            assert cell_len(piece) <= text_width
            drawn = source.render_line(y).text[gutter:]
            assert drawn.rstrip() == piece.rstrip(), (y, drawn, piece)
            read[row.number] = read.get(row.number, "") + piece
        assert [read[n] for n in sorted(read)] == code.splitlines()
        assert len(source.rows) > len(code.splitlines())  # the long lines were folded


async def test_a_new_width_draws_only_the_rows_it_cuts_anew(tmp_path: Path) -> None:
    """Rows are kept across widths: at a new width the pane draws what a pane that had never
    drawn the file draws (characters and styles), and builds anew only the rows cut
    differently (a line that fits both widths is the same row at both)."""

    from .conftest import seen_cells

    code = "def f(run):\n" + "".join(f"    value_{n} = {'x + ' * (n * 3)}1\n" for n in range(20))
    path = tmp_path / "widths.py"
    path.write_text(code, encoding="utf-8")

    def cells(source: SourceView) -> list[list[tuple[str, object]]]:
        return [seen_cells(source.render_line(y)) for y in range(source.size.height)]

    app = app_with(lambda: SourceView(id="source"))
    async with app.run_test(size=(100, 30)) as pilot:
        source = app.query_one(SourceView)
        source.show_file(str(path), (3, 4))
        await settle(pilot)
        cells(source)
        drawn_before = len(source._pieces)
        await pilot.resize_terminal(70, 30)
        await settle(pilot)
        kept = cells(source)
        built = len(source._pieces) - drawn_before
        cut_anew = {(row.number, row.start, row.end) for row in source.rows[: source.size.height]}
        assert 0 < built < len(cut_anew)  # the short lines were not drawn again
        source._forget_drawn()
        assert cells(source) == kept


@dataclass
class DrawnAhead:
    """A code pane after a lesson's first step drew the second step's code ahead, and the
    learner moved to the second step (which the pane then drew)."""

    pane: SourceView
    shown_before: bool
    """Whether the pane was on screen at the first step."""
    drawn_ahead: set[tuple[object, ...]]
    """Its rows held when the second step was reached."""
    rows: list[list[tuple[str, object]]]
    """What it drew at the second step, cell by cell."""

    def whole(self, shorter_than: int) -> set[int]:
        """The lines of its file that fit any width the pane gets (none is cut)."""
        return {
            number
            for number, line in enumerate(self.pane.lines, start=1)
            if len(line.plain) < shorter_than
        }

    def on_screen(self) -> set[int]:
        pane = self.pane
        return {row.number for row in pane.rows[pane.scroll_offset.y :][: pane.size.height]}

    def built_on_the_step(self) -> set[int]:
        """The lines of its file whose rows were drawn on reaching the step, not ahead."""
        built = set(self.pane._pieces) - self.drawn_ahead
        return {number for path, number, *_cut in built if path == self.pane.path}


@asynccontextmanager
async def moved_after_drawing_ahead(
    folder: Path, lesson_text: str, pane_id: str
) -> AsyncIterator[DrawnAhead]:
    from .conftest import seen_cells

    lesson = folder / "lesson.yaml"
    lesson.write_text(lesson_text, encoding="utf-8")
    app = make_lesson_app(lesson, resume=False)
    async with lesson_running(app) as (pilot, screen):
        pane = screen.query_one(pane_id, SourceView)
        screen.go_to_step(0)
        await settle(pilot)
        shown_before = pane.display
        screen.drawing.prepare_nearby()
        drawn_ahead = set(pane._pieces)
        screen.go_to_step(1)
        await settle(pilot)
        rows = [seen_cells(pane.render_line(y)) for y in range(pane.size.height)]
        yield DrawnAhead(pane, shown_before, drawn_ahead, rows)


async def test_the_code_of_the_next_step_is_drawn_ahead(tmp_path: Path) -> None:
    """While the learner reads a step, the code pane draws ahead the lines the next step will
    show (another variant's file): moving there builds few rows anew, and the pane shows what
    a pane that had drawn nothing ahead shows."""
    from .conftest import seen_cells

    async with moved_after_drawing_ahead(tmp_path, TWO_FILES, "#source") as ahead:
        source = ahead.pane
        assert source.path is not None and source.path.endswith("naive_loop.py")
        whole = ahead.whole(40)
        assert whole & ahead.on_screen()  # some lines fit: they were drawn ahead, not now
        assert not ahead.built_on_the_step() & whole
        source._forget_drawn()
        assert [seen_cells(source.render_line(y)) for y in range(source.size.height)] == ahead.rows


COMPARE_NEXT = """\
title: A compare next
summary: A table, then the same scores two ways.
steps:
  - show: {variant: vectorized, stage: scores}
  - compare:
      stage: scores
      left: {variant: vectorized}
      right: {variant: naive-loop}
"""


async def test_a_compare_steps_second_code_pane_is_drawn_ahead_while_hidden(
    tmp_path: Path,
) -> None:
    """A compare step's second code pane is hidden until a compare is shown; the code it will
    show is drawn ahead all the same (a screenful either side of the lines that ran), so the
    first compare builds none of its whole lines anew."""
    async with moved_after_drawing_ahead(tmp_path, COMPARE_NEXT, "#source-right") as ahead:
        right = ahead.pane
        assert not ahead.shown_before
        assert right.display and right.path is not None and right.path.endswith("naive_loop.py")
        whole = ahead.whole(30)
        assert whole & ahead.on_screen()
        assert not ahead.built_on_the_step() & whole


LOOP_NEXT = """\
title: A loop next
summary: A table, then the loop that builds another.
steps:
  - show: {variant: vectorized, stage: scores}
  - loop: {variant: naive-loop, stage: scores, query: 1}
"""


async def test_the_code_a_loop_shows_on_entering_is_drawn_ahead(tmp_path: Path) -> None:
    """The lines a loop's first sub-step ran are known once its stepper holds that sub-step
    (the lesson's loading fetches it): the code pane draws them ahead, marked as they will
    be, and entering the loop builds none of its whole lines anew."""
    async with moved_after_drawing_ahead(tmp_path, LOOP_NEXT, "#source") as ahead:
        source = ahead.pane
        assert source.path is not None and source.path.endswith("naive_loop.py")
        assert source.marked  # the sub-step's lines
        whole = ahead.whole(30)
        assert whole & ahead.on_screen()
        assert not ahead.built_on_the_step() & whole
