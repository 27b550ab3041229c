"""Drawing a widget's rows of content with less of Textual's per-row work.

Textual's ``StylesCache`` draws every row of a widget on its own: it looks up
the widget's border, outline, padding, tint and opacity, builds the border's
styles and boxes, and wraps the row, about 50 µs a row. A step of a lesson
draws some hundred rows anew (the code, the tables, their blank rows), so that
work is a few milliseconds of a key press. :class:`QuickStylesCache` looks the
frame up once per drawing and puts each content row in it; rows of a border,
of padding, and widgets with a tint, an outline, a hatch or any opacity are
drawn by Textual's own code. A row handed back again in the same drawing (the
blank rows below a table or past the end of the code) is framed once: the same
framed row comes back, and with it Textual's filtered copy of it, kept on the
row. ``tests/tui/test_kept.py`` compares the rows with Textual's drawing after
each step, hover and theme.

``StylesCache`` and the helpers used here are private to Textual: where they are
missing or changed (:data:`tracer.tui.textual_hooks.QUICK_ROWS`), or the speed-ups
are off, widgets keep Textual's own cache.
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.strip import Strip
from textual.style import Style

from tracer.tui import textual_hooks as hooks

if hooks.QUICK_ROWS:
    from textual._border import get_box
    from textual._segment_tools import line_pad
    from textual._styles_cache import StylesCache
else:  # pragma: no cover - another Textual: never made (see textual_hooks.QUICK_ROWS)
    StylesCache = object  # type: ignore[misc,assignment]


class QuickStylesCache(StylesCache):
    """Textual's row cache, drawing plain content rows in a frame found once per drawing."""

    _frame: tuple[Any, Segment | None, Segment | None, Any] | None = None
    """(gutter, left border, right border, inner style) for the drawing in progress; None:
    every row is Textual's."""
    _framed: dict[int, tuple[Strip, Strip]] | None = None
    """The drawing in progress's framed rows by the content row they frame (``id``; the
    row is kept with it, so the id is not reused): a row the widget hands back again (a
    blank row below a table, Textual's blank rows) is framed once, and the same framed row
    comes back, which also keeps its filtered copy (``Strip.apply_filter`` caches it)."""

    def cached_rows(self, lines: range) -> dict[int, Strip]:
        """Textual's cached rows (framed, before filters and crop) of these lines."""
        cache = self._cache
        return {y: cache[y] for y in lines if y in cache}

    def put_back(self, rows: dict[int, Strip], width: int) -> None:
        """The cache as :meth:`cached_rows` found it right after a drawing: those rows of a
        widget ``width`` wide, none to draw again, and nothing else."""
        self.clear()
        self._width = width
        self._cache.update(rows)

    def render(
        self,
        styles: Any,
        size: Any,
        base_background: Any,
        background: Any,
        *args: Any,
        **kwargs: Any,
    ) -> list[Strip]:
        self._frame = self._find_frame(styles, base_background, background, kwargs)
        self._framed = {}
        try:
            return super().render(styles, size, base_background, background, *args, **kwargs)
        finally:
            self._frame = self._framed = None

    def _find_frame(
        self, styles: Any, base_background: Any, background: Any, options: dict[str, Any]
    ) -> tuple[Any, Segment | None, Segment | None, Any] | None:
        # Opacity comes as a keyword (Textual's render_widget): missing, nothing is assumed.
        if not hooks.hooks_on() or options.get("opacity") != 1.0:
            return None
        if styles.tint.a or styles.text_opacity != 1.0 or styles.has_rule("hatch"):
            return None
        if any(edge for edge, _colour in styles.outline):
            return None
        inner, outer = self.get_inner_outer(base_background, background)
        _top, (right, right_colour), _bottom, (left, left_colour) = styles.border
        left_box = (
            get_box(left, inner, outer, Style(foreground=base_background + left_colour))[1][0]
            if left
            else None
        )
        right_box = (
            get_box(right, inner, outer, Style(foreground=base_background + right_colour))[1][2]
            if right
            else None
        )
        return styles.gutter, left_box, right_box, inner.rich_style

    def render_line(
        self,
        styles: Any,
        y: int,
        size: Any,
        content_size: Any,
        padding: Any,
        *args: Any,
    ) -> Strip:
        frame = self._frame
        if frame is not None:
            gutter, inner_style = frame[0], frame[3]
            width, height = size
            if gutter.top <= y < height - gutter.bottom:  # a row of content, not of border
                content_width, content_height = content_size
                content_y = y - gutter.top
                render_content_line = args[2]
                line = (
                    render_content_line(content_y)
                    if content_y < content_height
                    else Strip.blank(content_width, inner_style)  # one object (lru-cached)
                )
                framed = self._framed
                known = framed.get(id(line)) if framed is not None else None
                if known is not None and known[0] is line:
                    return known[1]
                strip = self._framed_row(line, content_width, width, padding, frame)
                if framed is not None:
                    framed[id(line)] = (line, strip)
                return strip
        return super().render_line(styles, y, size, content_size, padding, *args)

    @staticmethod
    def _framed_row(
        content: Strip,
        content_width: int,
        width: int,
        padding: Any,
        frame: tuple[Any, Segment | None, Segment | None, Any],
    ) -> Strip:
        """A content row padded and put between the borders' edges."""
        _gutter, left, right, inner_style = frame
        line = content.adjust_cell_length(content_width, inner_style)
        _top, pad_right, _bottom, pad_left = padding
        segments = (
            line_pad(line, pad_left, pad_right, inner_style)
            if pad_left or pad_right
            else list(line)
        )
        if left is not None:
            segments.insert(0, left)
        if right is not None:
            segments.append(right)
        return Strip(segments, width)
