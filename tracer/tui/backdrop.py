"""Containers that draw each kind of blank row once.

Textual's compositor asks every visible widget for every row of its region,
containers included, though their children cover most of it. A container's own
content is blank, so its rows come in a few bands that each repeat one row: the
top and bottom border rows, the padding above and below, and the rows between.
Textual still draws every row through its per-row path (about 50 µs a row here),
and a change of step kind resizes the whole nest of containers under the tables
and the code, five deep: 150–200 rows, a third of that key's frame.

:class:`Backdrop` asks Textual for one row of each band and repeats it, so the
strips are the ones Textual would draw, filters (``NO_COLOR``) and border titles
included. ``tests/tui/test_backdrop.py`` compares them, row by row, with
Textual's own drawing of every container on every step of the test lesson.
With the speed-ups off (:mod:`tracer.tui.textual_hooks`) Textual draws every row.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from tracer.tui import textual_hooks as hooks


class Backdrop(Widget):
    """A container that draws one row per band of blank rows and repeats it.

    A mixin: list it after the Textual class (``class Column(Vertical, SteadySize,
    Backdrop)``), or after ``Screen`` (a screen's own content is its background: the compositor
    asks for it under every repainted area, a millisecond a frame row by row). A class that
    draws content of its own (overrides ``render``), or a container styled with a keyline or a
    hatch (rows that differ), is drawn by Textual row by row, as before.
    """

    def render_lines(self, crop: Region) -> list[Strip]:
        styles = self.styles
        if (
            not (hooks.ROWS and hooks.hooks_on())
            or crop.height < 2
            or type(self).render not in (Widget.render, Screen.render)
            or not self.is_container
            or styles.has_rule("keyline")
            or (styles.has_rule("hatch") and styles.hatch != "none")
        ):
            return super().render_lines(crop)
        height = self.region.height
        top = int(
            styles.border_top[0] not in ("", "none") or styles.outline_top[0] not in ("", "none")
        )
        bottom = int(
            styles.border_bottom[0] not in ("", "none")
            or styles.outline_bottom[0] not in ("", "none")
        )
        above = top + styles.padding.top
        below = height - bottom - styles.padding.bottom
        drawn: dict[object, Strip] = {}
        lines: list[Strip] = []
        x, first, width, rows = crop
        for y in range(first, first + rows):
            band: object
            if y < top or y >= height - bottom:
                band = y  # a border row: its own
            elif y < above:
                band = "above"
            elif y >= below:
                band = "below"
            else:
                band = "inside"
            strip = drawn.get(band)
            if strip is None:
                strip = drawn[band] = super().render_lines(Region(x, y, width, 1))[0]
            lines.append(strip)
        return lines
