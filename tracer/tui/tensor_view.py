"""The tensor view: a labelled heatmap of numbers that draws only the cells on screen.

Like Textual's DataTable it uses the line API: ``render_line(y)`` builds one
row of the visible window from a slice of the grid, so stepping through a
1,024-token trace costs a screenful of cells per frame, not a million. The
column labels stay on the first line and the row labels on the left while
the numbers scroll.

A grid too wide for its numbers is drawn as an **overview** instead: the whole
matrix at once, two blocks per character cell (``▀`` with a foreground and a
background colour), each block the mean of the cells it covers, the current
cell marked; ``z`` zooms into the numbers around it and back. For attention
weights, ``w`` draws the focused query's weight to every key as a bar
(token to token). Colours come from fixed, colour-blind-safe ramps (viridis,
and blue/orange around zero) with text in whichever of black or white
contrasts, so they read the same in light and dark themes.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.css.scalar import Scalar
from textual.geometry import Region, Size
from textual.strip import Strip

from tracer.tui.colours import theme_colours
from tracer.tui.grid import Grid
from tracer.tui.steady import SteadyScroll, inside_shown

LABEL_LIMIT = 12
HEAT_STEPS = 10
SEQUENTIAL = (
    "#440154", "#482878", "#3e4989", "#31688e", "#26828e",
    "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
)  # fmt: skip
"""Viridis: lightness grows with the value, readable in grey and for colour-blind readers."""
NEUTRAL, POSITIVE, NEGATIVE = "#d9d9d9", "#2166ac", "#b35806"
"""Around zero: blue for positive, orange for negative (a colour-blind-safe pair)."""
BAR = " ▏▎▍▌▋▊▉█"
Mode = str  # "numbers", "wrapped", "overview" or "tokens"
WRAP_BLOCKS = 4
"""A one-row table too wide for the view is wrapped into at most this many blocks of columns
(header and numbers each), like ``--plain``; wider still, it is drawn as an overview."""


DIVERGING_STEPS = 16
_SEQUENTIAL = tuple(Color.parse(hex_) for hex_ in SEQUENTIAL)
_DIVERGING = {
    sign: tuple(
        Color.parse(NEUTRAL).blend(Color.parse(end), 0.1 + 0.9 * step / (DIVERGING_STEPS - 1))
        for step in range(DIVERGING_STEPS)
    )
    for sign, end in ((1, POSITIVE), (-1, NEGATIVE))
}
"""The ramps, made once: a frame of the overview looks up thousands of cells."""


def ramp_colour(value: float, low: float, high: float) -> Color | None:
    """The heatmap colour of ``value`` on the grid's scale (None for inf/nan)."""
    if not math.isfinite(value):
        return None
    if low < 0 < high:
        scale = max(-low, high)
        level = min(abs(value) / scale, 1.0) if scale else 0.0
        return _DIVERGING[-1 if value < 0 else 1][round(level * (DIVERGING_STEPS - 1))]
    span = high - low
    level = round((value - low) / span * (HEAT_STEPS - 1)) if span else HEAT_STEPS // 2
    return _SEQUENTIAL[max(0, min(level, HEAT_STEPS - 1))]


def _fit(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…"


class TensorView(SteadyScroll, can_focus=True, inherit_bindings=False):
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
        self._ramp: dict[tuple[str, int], Style] = {}
        self._pairs: dict[tuple[Color, Color], Style] = {}
        self._overview_cache: (
            tuple[tuple[int, int, int], list[list[float | None]], tuple[float, float]] | None
        ) = None
        self.zoomed: bool | None = None
        """None: numbers when they fit, else the overview; True/False: the learner chose."""
        self.token_view = False
        self._height_before: Scalar | None = None

    # Content ---------------------------------------------------------------------

    def show(self, grid: Grid | None, *, follow: bool = True) -> None:
        """Display ``grid``; with ``follow``, scroll so its current cell or first highlight is visible."""
        same_shape = (
            grid is not None
            and self.grid is not None
            and (grid.rows, grid.columns) == (self.grid.rows, self.grid.columns)
        )
        if not same_shape:
            self.zoomed = None  # a new table: numbers if they fit, else the overview
            self.token_view = False
        self.grid = grid
        self._overview_cache = None
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
        self._resize_virtual()
        self.refresh()
        if follow:
            if self.size.height > 0:
                self._follow()
            elif inside_shown(self):
                self.call_after_refresh(self._follow)
            # Else drawn ahead into a hidden pane: no window to scroll in; the step that
            # shows it asks (follow_after_frame).

    def follow_after_frame(self) -> None:
        """Scroll to the current cell or first highlight once the next frame has sized this."""
        self.call_after_refresh(self._follow)

    # Modes -----------------------------------------------------------------------

    def numbers_width(self) -> int:
        grid = self.grid
        if grid is None:
            return 0
        return self.label_width + 1 + grid.columns * (self.cell_width + 1)

    def natural_width(self) -> int | None:
        """Columns this view needs to show every number (a scrollbar's room included).

        None when it wants all the room it can get: the learner chose the overview
        or the token view, whose bars grow with the width.
        """
        if self.grid is None:
            return 0
        if self.token_view or self.zoomed is False:
            return None
        return self.numbers_width() + self.styles.scrollbar_size_vertical

    @property
    def mode(self) -> Mode:
        grid = self.grid
        if grid is None:
            return "numbers"
        if self.token_view and grid.is_weights():
            return "tokens"
        if self.zoomed is None:
            width = self.size.width or 80
            if self.numbers_width() <= width:
                return "numbers"
            if self.wrap_blocks(width) <= WRAP_BLOCKS:
                return "wrapped"  # one row (token ids, one query's weights): its labels stay
            if self.app.no_color:
                return "numbers"  # NO_COLOR: an overview is nothing but colour; numbers read
            return "overview"
        return "numbers" if self.zoomed else "overview"

    def wrap_columns(self, width: int) -> int:
        """Columns of a one-row table drawn in each block of the wrapped mode at ``width``."""
        return max(1, (width - self.label_width - 1) // (self.cell_width + 1))

    def wrap_blocks(self, width: int) -> int:
        """Blocks a one-row table wraps into at ``width`` (a large number for other tables)."""
        grid = self.grid
        if grid is None or grid.rows != 1:
            return 1 << 30
        return -(-grid.columns // self.wrap_columns(width))

    def toggle_zoom(self) -> None:
        """Numbers around the current cell, or the whole matrix at once."""
        self.token_view = False
        self.zoomed = self.mode != "numbers"
        self._resize_virtual()
        self.refresh()
        self.call_after_refresh(self._follow)

    def toggle_tokens(self) -> bool:
        """The focused query's weight to every key, as bars; False if these are not weights."""
        if self.grid is None or not self.grid.is_weights():
            return False
        self.token_view = not self.token_view
        if self.token_view:
            self._height_before = self.styles.height
            self.styles.height = "1fr"  # one line per key, whatever the table's own height
        elif self._height_before is not None:
            self.styles.height = self._height_before
        self._resize_virtual()
        self.scroll_to(0, 0, animate=False)
        self.refresh()
        return True

    def on_resize(self) -> None:
        self._resize_virtual()

    def _resize_virtual(self) -> None:
        grid = self.grid
        if grid is None:
            return
        mode = self.mode
        if mode == "numbers":
            size = Size(self.numbers_width(), grid.rows + 1)
        elif mode == "wrapped":
            lines = 2 * self.wrap_blocks(self.size.width)
            size = Size(max(self.size.width, 1), lines)
            height = self.styles.height
            if height is not None and height.is_cells and height.value < lines:
                self.styles.height = lines  # a table given its lines gets the wrapped ones
        elif mode == "tokens":
            size = Size(max(self.size.width, 1), grid.columns + 1)
        else:
            size = Size(max(self.size.width, 1), max(self.size.height, 1))
        if self.virtual_size != size:
            self.virtual_size = size

    def focus_row(self) -> int:
        """The query row the token view draws: the current cell's, the highlighted, or the first."""
        grid = self.grid
        if grid is None:
            return 0
        if grid.highlight.current is not None:
            return grid.highlight.current[0]
        if grid.highlight.rows:
            return min(grid.highlight.rows)
        if grid.highlight.cells:
            return min(cell[0] for cell in grid.highlight.cells)
        return 0

    def _follow(self) -> None:
        grid = self.grid
        if grid is None or self.mode != "numbers":
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
        self._ramp.clear()

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
        base, text, accent = theme_colours(self)
        if kind == "current":
            # Underlined as well as coloured: still marked with NO_COLOR or in grey.
            style = Style(
                color=accent.get_contrast_text(1.0).rich_color,
                bgcolor=accent.rich_color,
                bold=True,
                underline=True,
            )
        elif kind == "focus":
            # The lesson's focus: a lighter accent than the cell being computed.
            background = base.blend(accent, 0.55)
            style = Style(
                color=background.get_contrast_text(1.0).rich_color,
                bgcolor=background.rich_color,
                bold=True,
                underline=True,
            )
        elif kind == "bar":
            style = Style(
                color=Color.parse(POSITIVE).blend(text, 0.25).rich_color, bgcolor=base.rich_color
            )
        elif kind == "empty":
            style = Style(color=base.blend(text, 0.35).rich_color, bgcolor=base.rich_color)
        elif kind == "label":
            style = Style(color=text.rich_color, bgcolor=base.rich_color, bold=True)
        elif kind == "label-hot":
            # The theme's text on an accent tint: readable in light themes too.
            tint = base.blend(accent, 0.3)
            style = Style(color=text.rich_color, bgcolor=tint.rich_color, bold=True, underline=True)
        else:  # "blank"
            style = Style(bgcolor=base.rich_color)
        self._styles[key] = style
        return style

    def _cell_style(self, value: float, low: float, high: float, emphasised: bool) -> Style:
        colour = ramp_colour(value, low, high)
        if colour is None:
            style = self._style("empty")
        else:
            key = (colour.hex, int(emphasised))
            cached = self._ramp.get(key)
            if cached is None:
                cached = self._ramp[key] = Style(
                    color=colour.get_contrast_text(1.0).rich_color,
                    bgcolor=colour.rich_color,
                    bold=emphasised,
                    underline=emphasised,
                )
            style = cached
        return style

    # Rendering -------------------------------------------------------------------

    REMEMBERED = 8
    """Drawings remembered by what they show: a step shown again draws its tables from them."""

    def drawn_from(self) -> Hashable | None:
        grid = self.grid
        shown = grid.drawn_key() if grid is not None else ()
        if shown is None:
            return None
        # The rows follow from the grid, how it is drawn (numbers, wrapped, an overview,
        # tokens), its cells' widths and the scroll; the size and theme are in every key.
        return (
            shown, self.zoomed, self.token_view, self.cell_width, self.label_width,
            self.scroll_offset, self.app.no_color,
        )  # fmt: skip

    _drawing: tuple[int, Mode] | None = None
    """The view's width and mode while :meth:`render_lines` draws its rows."""

    def render_lines(self, crop: Region) -> list[Strip]:
        # Found once for all rows: each lookup of the width (the mode reads it too) asks the
        # compositor where the view is.
        self._drawing = (self.size.width, self.mode)
        try:
            return super().render_lines(crop)
        finally:
            self._drawing = None

    def render_line(self, y: int) -> Strip:
        width, mode = self._drawing if self._drawing is not None else (self.size.width, self.mode)
        grid = self.grid
        if grid is None or width <= 0:
            return Strip.blank(width, self._style("blank"))
        if mode == "overview":
            return self._overview_line(y, width, grid)
        if mode == "tokens":
            return self._token_line(y, width, grid)
        scroll_x, scroll_y = self.scroll_offset
        cell = self.cell_width + 1
        data_width = max(width - self.label_width - 1, 0)
        first = scroll_x // cell
        last = min(grid.columns, (scroll_x + data_width) // cell + 1)
        if mode == "wrapped":  # block y // 2 of the one row: its header, then its numbers
            line = scroll_y + y
            per_block = self.wrap_columns(width)
            first = line // 2 * per_block
            last = min(grid.columns, first + per_block)
            if first >= grid.columns:
                return Strip.blank(width, self._style("blank"))
            scroll_x, scroll_y, y = first * cell, 0, line % 2
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
                if (row, col) in highlight.hidden:
                    data.append(Segment("?".rjust(self.cell_width), self._style("focus")))
                    continue
                text = grid.format(value).rjust(self.cell_width)
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

    def _overview_line(self, y: int, width: int, grid: Grid) -> Strip:
        """Two rows of blocks per line: ``▀`` in the upper block's colour on the lower's.

        The first line is the legend; where every column has a block of its own, the
        second names them (each label's first letter, a lesson's letter tokens read
        whole); each line starts with the number of its first row, counted from 0.
        """
        numbering = len(str(max(grid.rows - 1, 0)))
        gutter = numbering + 2
        columns = max(min(grid.columns, width - gutter), 1)
        ruler = self._ruler(grid, columns)
        heading = 2 if ruler is not None else 1
        rows = max(min(grid.rows, (self.size.height - heading) * 2), 1)
        key = (id(grid), rows, columns)
        if self._overview_cache is None or self._overview_cache[0] != key:
            blocks = grid.overview(rows, columns)
            # Colours span the block means' own range: averaging narrows it, and the full
            # range would paint everything one colour. The first line says what a block is.
            # A block holding a cell a quiz hides is drawn blank, and left out of the range:
            # the range's ends would otherwise be the answer.
            hidden = (
                {
                    (r * len(blocks) // grid.rows, c * len(blocks[0]) // grid.columns)
                    for r, c in grid.highlight.hidden
                }
                if blocks
                else set()
            )
            means = [
                v
                for y, row in enumerate(blocks)
                for x, v in enumerate(row)
                if v is not None and (y, x) not in hidden
            ]
            span = (min(means), max(means)) if means else (0.0, 0.0)
            self._overview_cache = (key, blocks, span)
        _, blocks, (low, high) = self._overview_cache
        shown_rows, shown_cols = len(blocks), len(blocks[0]) if blocks else 0
        if y == 0:
            per_row = math.ceil(grid.rows / max(shown_rows, 1))
            per_col = math.ceil(grid.columns / max(shown_cols, 1))
            one = per_row == per_col == 1
            scale = f"{grid.format(low)} to {grid.format(high)}"
            if one:
                choices: tuple[str, ...] = (
                    f"overview · each block one value · {scale} · z: numbers",
                    f"overview · each block one value · {scale}",
                    f"overview · one value a block · {scale}",
                    f"one value a block · {scale}",
                    scale,
                )
            else:
                # The colours span the block means, but the legend also states the cells'
                # own range: averaging narrows it (a 0.9997 weight in a block of six rows
                # is a mean of 0.24), and the means alone would misstate the largest value.
                shown = grid.shown_range()
                cells = f"{grid.format(shown[0])} to {grid.format(shown[1])}" if shown else "none"
                block = f"each block the mean of up to {per_row}×{per_col} values"
                short = f"means of ≤{per_row}×{per_col}"
                choices = (
                    f"overview · {block}: {scale} (cells {cells}) · z: numbers",
                    f"overview · {block}: {scale} (cells {cells})",
                    f"overview · {short}: {scale} (cells {cells})",
                    f"{short}: {scale} (cells {cells})",
                    f"means {scale}, cells {cells}",
                    f"cells {cells}",
                )
            # The longest header that fits whole: a cut-off range would read as a wrong one.
            header = next((text for text in choices if len(text) <= width), choices[-1])
            return Strip([Segment(_fit(header, width), self._style("label"))]).adjust_cell_length(
                width, self._style("blank")
            )
        if y == 1 and ruler is not None:
            return Strip([Segment(" " * gutter + ruler, self._style("label"))]).adjust_cell_length(
                width, self._style("blank")
            )
        y -= heading
        top, bottom = 2 * y, 2 * y + 1
        if top >= shown_rows:
            return Strip.blank(width, self._style("blank"))
        current = grid.highlight.current
        if current is None and grid.highlight.cells:
            current = min(grid.highlight.cells)
        marked: tuple[int, int] | None = None
        if current is not None:
            marked = (current[0] * shown_rows // grid.rows, current[1] * shown_cols // grid.columns)
        hot_rows = {r * shown_rows // grid.rows for r in grid.highlight.rows}
        on_row = marked is not None and marked[0] in (top, bottom)
        on_row = on_row or bool(hot_rows & {top, bottom})
        first_row = top * grid.rows // shown_rows  # where adaptive pooling starts the block
        segments = [
            Segment(
                f"{first_row:>{numbering}}" + ("▶ " if on_row else "  "),
                self._style("label-hot" if on_row else "label"),
            )
        ]
        blank_style = self._style("blank").bgcolor
        blank = Color.from_rich_color(blank_style) if blank_style else Color(0, 0, 0)
        hidden = {
            (r * shown_rows // grid.rows, c * shown_cols // grid.columns)
            for r, c in grid.highlight.hidden
        }
        for col in range(shown_cols):
            upper = None if (top, col) in hidden else blocks[top][col]
            lower = blocks[bottom][col] if bottom < shown_rows else None
            if (bottom, col) in hidden:
                lower = None
            if marked is not None and marked[1] == col and marked[0] in (top, bottom):
                segments.append(Segment("◆", self._style("current")))
                continue
            fg = (ramp_colour(upper, low, high) if upper is not None else None) or blank
            bg = (ramp_colour(lower, low, high) if lower is not None else None) or blank
            if bottom >= shown_rows:
                bg = blank
            pair = self._pairs.get((fg, bg))
            if pair is None:
                pair = self._pairs[(fg, bg)] = Style(color=fg.rich_color, bgcolor=bg.rich_color)
            segments.append(Segment("▀", pair))
        return Strip(segments).adjust_cell_length(width, self._style("blank"))

    def _ruler(self, grid: Grid, columns: int) -> str | None:
        """The overview's column line: a character per column (a label's first letter, or
        the last digit of a number) when each column has its own block; else None."""
        if columns < grid.columns or self.size.height < 4:
            return None
        letters = []
        for label in grid.column_labels:
            text = label.strip()
            letters.append(text[-1] if text.isdigit() else text[:1] or " ")
        return "".join(letters)

    def _token_line(self, y: int, width: int, grid: Grid) -> Strip:
        """Line ``y`` of the token view: the focused query's weight to one key, as a bar."""
        row = min(self.focus_row(), grid.rows - 1)
        query = grid.row_labels[row] or "query"
        if y == 0:
            title = f"{query} attends to each key (its weights, summing to 1) · w: table"
            return Strip(
                [Segment(_fit(title, width), self._style("label-hot"))]
            ).adjust_cell_length(width, self._style("blank"))
        col = self.scroll_offset.y + y - 1
        if col >= grid.columns:
            return Strip.blank(width, self._style("blank"))
        value = grid.row(row, col, col + 1)[0]
        if (row, col) in grid.highlight.hidden:
            value = None
        key = _fit(grid.column_labels[col], LABEL_LIMIT).ljust(
            min(self._key_width(grid), LABEL_LIMIT)
        )
        number = grid.format(value) if value is not None else "·"
        room = max(width - len(key) - len(number) - 6, 1)
        eighths = round((value or 0.0) * room * 8)
        bar = "█" * (eighths // 8) + (BAR[eighths % 8] if eighths % 8 else "")
        hot = col in grid.highlight.columns
        segments = [
            Segment(f"→ {key} ", self._style("label-hot" if hot else "label")),
            Segment(bar.ljust(room), self._style("bar")),
            Segment(f" {number}", self._style("label")),
        ]
        return Strip(segments).adjust_cell_length(width, self._style("blank"))

    @staticmethod
    def _key_width(grid: Grid) -> int:
        return max((len(label) for label in grid.column_labels), default=1)
