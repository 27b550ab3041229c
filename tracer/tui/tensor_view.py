"""The tensor view: a labelled heatmap of numbers that draws only the cells on screen.

Like Textual's DataTable it uses the line API: ``render_line(y)`` builds one
row of the visible window from a slice of the grid, so stepping through a
1,024-token trace costs a screenful of cells per frame, not a million. The
column labels stay on the first line and the row labels on the left while
the numbers scroll.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracer.render.text import format_number
from tracer.tui.grid import Grid

LABEL_LIMIT = 12
HEAT_STEPS = 10


def _fit(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…"


class TensorView(ScrollView, can_focus=True, inherit_bindings=False):
    """Shows one :class:`~tracer.tui.grid.Grid`; scrolls with ↑/↓, PgUp/PgDn and shift+←/→."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Scroll up", show=False),
        Binding("down", "scroll_down", "Scroll down", show=False),
        Binding("shift+left", "scroll_left", "Scroll left", show=False),
        Binding("shift+right", "scroll_right", "Scroll right", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    DEFAULT_CSS = """
    TensorView {
        height: 1fr;
        background: $surface;
    }
    """

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.grid: Grid | None = None
        self.cell_width = 6
        self.label_width = 1
        self._styles: dict[tuple[str, int], Style] = {}

    # Content ---------------------------------------------------------------------

    def show(self, grid: Grid | None, *, follow: bool = True) -> None:
        """Display ``grid``; with ``follow``, scroll so its current cell or first highlight is visible."""
        self.grid = grid
        if grid is None:
            self.virtual_size = Size(0, 0)
            self.refresh()
            return
        labels = [*grid.column_labels]
        label_cap = min(max((len(label) for label in labels), default=0), LABEL_LIMIT)
        self.cell_width = max(grid.number_width(), label_cap, 1)
        self.label_width = min(
            max((len(label) for label in grid.row_labels), default=0), LABEL_LIMIT
        )
        self.virtual_size = Size(
            self.label_width + 1 + grid.columns * (self.cell_width + 1), grid.rows + 1
        )
        self.refresh()
        if follow:
            if self.size.height > 0:
                self._follow()
            else:
                self.call_after_refresh(self._follow)

    def _follow(self) -> None:
        grid = self.grid
        if grid is None:
            return
        target = grid.highlight.current
        if target is None and grid.highlight.rows:
            target = (min(grid.highlight.rows), 0)
        if target is None:
            return
        row, col = target
        x = self.label_width + 1 + col * (self.cell_width + 1)
        # The fixed label column and header line cover part of the window; aim past them.
        region = Region(
            x - self.label_width - 1, row, self.label_width + 1 + self.cell_width + 1, 2
        )
        self.scroll_to_region(region, animate=False, immediate=True, force=True)

    # Styles ------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())

    def _restyle(self) -> None:
        self._styles.clear()
        self.refresh()

    def _style(self, kind: str, level: int = 0) -> Style:
        key = (kind, level)
        style = self._styles.get(key)
        if style is not None:
            return style
        theme = self.app.current_theme
        base = Color.parse(theme.surface or theme.background or "#1e1e1e")
        text = Color.parse(theme.foreground or "#e0e0e0")
        accent = Color.parse(theme.accent or theme.primary)
        if kind == "heat" or kind == "cold":
            tint = Color.parse(theme.primary if kind == "heat" else (theme.error or "#d04040"))
            background = base.blend(tint, 0.12 + 0.78 * level / (HEAT_STEPS - 1))
            style = Style(
                color=background.get_contrast_text(1.0).rich_color, bgcolor=background.rich_color
            )
        elif kind == "current":
            style = Style(
                color=accent.get_contrast_text(1.0).rich_color, bgcolor=accent.rich_color, bold=True
            )
        elif kind == "focus":
            # The lesson's focus: a lighter accent than the cell being computed.
            background = base.blend(accent, 0.55)
            style = Style(
                color=background.get_contrast_text(1.0).rich_color,
                bgcolor=background.rich_color,
                bold=True,
            )
        elif kind == "empty":
            style = Style(color=base.blend(text, 0.35).rich_color, bgcolor=base.rich_color)
        elif kind == "label":
            style = Style(
                color=base.blend(text, 0.7).rich_color, bgcolor=base.rich_color, bold=True
            )
        elif kind == "label-hot":
            style = Style(
                color=accent.rich_color, bgcolor=base.rich_color, bold=True, underline=True
            )
        else:  # "blank"
            style = Style(bgcolor=base.rich_color)
        self._styles[key] = style
        return style

    def _cell_style(self, value: float, low: float, high: float, emphasised: bool) -> Style:
        if not math.isfinite(value):
            style = self._style("empty")
        elif low < 0 < high:
            # Diverging: negative numbers in a second colour, scaled around zero.
            scale = max(-low, high)
            level = round(abs(value) / scale * (HEAT_STEPS - 1)) if scale else 0
            style = self._style("cold" if value < 0 else "heat", min(level, HEAT_STEPS - 1))
        else:
            span = high - low
            level = round((value - low) / span * (HEAT_STEPS - 1)) if span else HEAT_STEPS // 2
            style = self._style("heat", max(0, min(level, HEAT_STEPS - 1)))
        if emphasised:
            style = style + Style(bold=True, underline=True)
        return style

    # Rendering -------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        grid = self.grid
        if grid is None or width <= 0:
            return Strip.blank(width, self._style("blank"))
        scroll_x, scroll_y = self.scroll_offset
        cell = self.cell_width + 1
        data_width = max(width - self.label_width - 1, 0)
        first = scroll_x // cell
        last = min(grid.columns, (scroll_x + data_width) // cell + 1)
        highlight = grid.highlight
        segments: list[Segment] = []
        if y == 0:
            segments.append(Segment(" " * (self.label_width + 1), self._style("blank")))
            data: list[Segment] = []
            for col in range(first, last):
                hot = col in highlight.columns or (
                    highlight.current is not None and highlight.current[1] == col
                )
                label = _fit(grid.column_labels[col], self.cell_width).rjust(self.cell_width)
                data.append(Segment(" " + label, self._style("label-hot" if hot else "label")))
        else:
            row = scroll_y + y - 1
            if row >= grid.rows:
                return Strip.blank(width, self._style("blank"))
            hot_row = row in highlight.rows or (
                highlight.current is not None and highlight.current[0] == row
            )
            label = _fit(grid.row_labels[row], self.label_width).ljust(self.label_width)
            segments.append(Segment(label, self._style("label-hot" if hot_row else "label")))
            segments.append(Segment(" ", self._style("blank")))
            data = []
            blank = self._style("blank")
            for col, value in zip(range(first, last), grid.row(row, first, last), strict=True):
                data.append(Segment(" ", blank))
                if value is None:
                    data.append(Segment("·".rjust(self.cell_width), self._style("empty")))
                    continue
                text = format_number(value).rjust(self.cell_width)
                if highlight.current == (row, col):
                    style = self._style("current")
                elif (row, col) in highlight.cells:
                    style = self._style("focus")
                else:
                    emphasised = highlight.current is None and (hot_row or col in highlight.columns)
                    style = self._cell_style(value, grid.low, grid.high, emphasised)
                data.append(Segment(text, style))
        offset = scroll_x - first * cell
        data_strip = Strip(data).crop(offset, offset + data_width) if data else Strip([])
        strip = Strip.join([Strip(segments), data_strip])
        return strip.adjust_cell_length(width, self._style("blank"))
