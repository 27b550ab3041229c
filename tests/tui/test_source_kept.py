"""The source pane keeps the files it drew: a lesson that goes back to a variant's file draws
it as a pane that had never drawn it would, from the lines it drew before."""

from __future__ import annotations

from pathlib import Path

from tracer.tui.launch import make_lesson_app
from tracer.tui.lesson_screen import LessonScreen
from tracer.tui.source_view import SourceView

from .conftest import settle

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
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LessonScreen)
        source = screen.query_one("#source", SourceView)
        screen.go_to_step(0)
        await settle(pilot)
        first = source.path
        screen.go_to_step(1)
        await settle(pilot)
        assert source.path != first  # another file: the first one is kept as drawn
        assert first in source._seen
        screen.go_to_step(2)  # the first file again, other lines marked
        await settle(pilot)
        assert source.path == first and first not in source._seen
        kept_lines, kept_size, marked = drawn(source), source.virtual_size, source.marked
        produced, files = source._produced_name, source._files
        # The same file and marks in a pane that keeps nothing: drawn alike.
        source._seen.clear()
        source.path = None
        source.marked = frozenset()
        source.show_file(first, tuple(marked), produced=produced, files=files)
        await settle(pilot)
        assert drawn(source) == kept_lines
        assert source.virtual_size == kept_size
