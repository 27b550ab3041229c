"""Widgets that keep their drawn rows until something asks them to draw again.

A frame repaints the smallest box around everything that changed, and every
widget in that box is asked for its rows. Textual keeps each widget's rows, but
handing them back still costs about 50 µs a widget (its colours, filters and
region looked up again). A step of a lesson changes two timeline items and
asks all of them, a dozen or more, on every step; a loop's sub-step changes a
few tables and asks every container and pane around them.

:class:`Kept` hands back the very rows it handed back last time, as long as
nothing asked the widget to draw again (every change Textual knows of, a new
text, a style, a hover, a theme, reaches the hook that empties Textual's own
row cache, or updates the widget's styles) and the crop, the size, the theme and the
app's filters are the same. ``tests/tui/test_kept.py``
compares them with Textual's own drawing after each such change.

That hook is private to Textual: where it is missing or changed
(:mod:`tracer.tui.textual_hooks`), or the speed-ups are off, nothing is kept and
Textual draws every time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from tracer.tui import textual_hooks as hooks
from tracer.tui.quick_rows import QuickStylesCache

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


def recall(kept: dict[Key, Value], key: Key, make: Callable[[], Value], most: int) -> Value:
    """``kept[key]``, made and kept if missing; beyond ``most`` kept, the oldest made goes.

    What a widget keeps of its drawings (a scrollbar's, the footer's line, the code pane's
    foldings): a lesson goes back and forth between a few of each.
    """
    if key not in kept:
        kept[key] = make()
        while len(kept) > most:
            del kept[next(iter(kept))]
    return kept[key]


class Kept(Widget):
    """A widget that hands back its last drawn rows until it is refreshed.

    A mixin: list it after the Textual class (``class TimelineItem(Static, SteadySize, Kept)``),
    and before :class:`~tracer.tui.backdrop.Backdrop` where both apply, so that the rows
    kept are the whole crop the compositor asked for.
    """

    _kept: tuple[object, list[Strip]] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if hooks.QUICK_ROWS:
            self._styles_cache = QuickStylesCache()  # its rows drawn in a frame found once

    def notify_style_update(self) -> None:
        self._kept = None
        super().notify_style_update()

    if hooks.SET_DIRTY:

        def _set_dirty(self, *regions: Region) -> None:
            # Overrides Textual's private hook that marks rows for drawing again and empties
            # its own row cache: every repaint ``refresh`` asks for lands here, and so do the
            # paths that bypass it (a new size, a styles reset). The kept rows go with Textual's.
            self._kept = None
            super()._set_dirty(*regions)

    def render_lines(self, crop: Region) -> list[Strip]:
        if not (hooks.SET_DIRTY and hooks.ROWS and hooks.hooks_on()):
            return super().render_lines(crop)
        app = self.app
        key = (crop, self.region.size, app.theme, tuple(map(id, self.get_line_filters())))
        kept = self._kept
        if kept is not None and kept[0] == key:
            return kept[1]
        lines = super().render_lines(crop)
        self._kept = (key, lines)
        return lines
