"""The plugin's source file, with the lines that produced the current step highlighted.

Like a debugger: line numbers in a gutter, a marker and a tinted background
on the lines that ran since the previous step, scrolled into view. The file
is syntax-highlighted once; each step only changes which lines are tinted.
"""

from __future__ import annotations

import functools
import linecache
from pathlib import Path
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


@functools.lru_cache(maxsize=32)
def highlighted(path: str, dark: bool = True) -> tuple[Text, ...]:
    """A source file's lines, syntax-highlighted once (loading workers call this ahead)."""
    code = "".join(linecache.getlines(path))
    if not code and Path(path).is_file():
        code = Path(path).read_text(encoding="utf-8", errors="replace")
    if not code:
        return ()
    syntax = Syntax(code, "python", theme="ansi_dark" if dark else "ansi_light")
    lines = list(syntax.highlight(code).split("\n", allow_blank=True))
    if lines and not lines[-1].plain:
        lines.pop()
    return tuple(lines)


class SourceView(ScrollView, can_focus=True, inherit_bindings=False):
    """Read-only view of one source file with a set of highlighted lines."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Scroll up", show=False),
        Binding("down", "scroll_down", "Scroll down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    DEFAULT_CSS = """
    SourceView {
        height: 1fr;
        background: $surface;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.path: str | None = None
        self.lines: list[Text] = []
        self.marked: frozenset[int] = frozenset()
        self._strips: dict[tuple[int, bool, int], Strip] = {}

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._reload())

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def _reload(self) -> None:
        if self.path is not None:
            path, self.path = self.path, None
            self.show_file(path, self.marked)

    def show_file(self, path: str | None, marked: tuple[int, ...] | frozenset[int] = ()) -> None:
        """Show ``path`` with ``marked`` (1-based line numbers) highlighted and in view."""
        if path != self.path:
            self.path = path
            self._strips.clear()
            self.lines = list(highlighted(path, self.app.current_theme.dark)) if path else []
            self.virtual_size = Size(
                self._gutter() + max((t.cell_len for t in self.lines), default=0), len(self.lines)
            )
        marked = frozenset(marked)
        if marked == self.marked and path == self.path and self.lines:
            return
        self.marked = marked
        self.refresh()
        if self.marked:
            # Scroll in the same frame when the size is known; a later frame costs a repaint.
            if self.size.height > 0 and path == self.path:
                self._reveal()
            else:
                self.call_after_refresh(self._reveal)

    def on_resize(self) -> None:
        # A new height (a resized terminal, a narrow layout) may hide the marked lines.
        if self.marked:
            self.call_after_refresh(self._reveal)

    def _reveal(self) -> None:
        if not self.marked:
            return
        first, last = min(self.marked), max(self.marked)
        top = self.scroll_offset.y
        if top < first and last <= top + self.size.height:
            return  # already in view: scrolling would only cost a repaint
        height = min(last - first + 1, max(self.size.height - 2, 1))
        region = Region(0, first - 1, 1, height)
        self.scroll_to_region(region, animate=False, immediate=True, force=True, center=True)

    def _gutter(self) -> int:
        return len(str(max(len(self.lines), 1))) + 3

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y + 1
        theme = self.app.current_theme
        base = Color.parse(theme.surface or theme.background or "#1e1e1e")
        if number > len(self.lines):
            return Strip.blank(width, Style(bgcolor=base.rich_color))
        marked = number in self.marked
        key = (number, marked, width + scroll_x * 10_000)
        cached = self._strips.get(key)
        if cached is not None:
            return cached
        text_colour = Color.parse(theme.foreground or "#e0e0e0")
        accent = Color.parse(theme.accent or theme.primary)
        background = base.blend(accent, 0.28) if marked else base
        gutter_style = Style(
            color=(accent if marked else base.blend(text_colour, 0.45)).rich_color,
            bgcolor=background.rich_color,
            bold=marked,
        )
        marker = "▶" if marked else " "
        gutter = f"{marker}{number:>{self._gutter() - 3}}  "
        line_segments = list(self.lines[number - 1].render(self.app.console))
        body = Strip(line_segments).crop(scroll_x, scroll_x + max(width - len(gutter), 0))
        body = body.apply_style(Style(bgcolor=background.rich_color))
        strip = Strip.join([Strip([Segment(gutter, gutter_style)]), body]).adjust_cell_length(
            width, Style(bgcolor=background.rich_color)
        )
        self._strips[key] = strip
        return strip
