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

A widget that says what its rows are drawn from (:meth:`Kept.drawn_from`: a text's
characters and styles, a pane's border titles) also remembers its last few drawings by
that, and hands one back when it is asked to draw what it drew before (the step before,
shown again): a change of step kind draws its texts, titles and containers anew, a
millisecond or more of the key, and a learner goes back and forth. The memory goes with
any restyle (a class, a hover, the focus, a theme), and its key holds the widget's own
style changes (a colour set in code; not a change of its display or size, which draws
nothing), so a remembered drawing is one Textual would draw now. Like Textual's own row
cache, it does not see a colour set in code on a widget around it (attn sets none).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual.content import Content
from textual.dom import NoScreen
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


LAYOUT_RULES = frozenset(
    {
        "display", "width", "height", "min_width", "max_width", "min_height", "max_height",
        "margin", "offset", "dock", "layer", "column_span", "row_span",
    }
)  # fmt: skip
"""Style rules that move or size a widget but draw nothing in it: setting them (a pane
shown or hidden, a table given its height) leaves its remembered drawings good."""


def content_key(content: object) -> Hashable | None:
    """What a ``Static``'s content draws: its characters and their styles (None: not known)."""
    if isinstance(content, str):
        return ("str", content)
    if isinstance(content, Text):
        return (
            "text", content.plain, tuple(content.spans), content.style, content.justify,
            content.overflow, content.no_wrap, content.end, content.tab_size,
        )  # fmt: skip
    if isinstance(content, Content):
        return ("content", content.plain, tuple(content.spans))
    return None


class Kept(Widget):
    """A widget that hands back its last drawn rows until it is refreshed.

    A mixin: list it after the Textual class (``class TimelineItem(Static, SteadySize, Kept)``),
    and before :class:`~tracer.tui.backdrop.Backdrop` where both apply, so that the rows
    kept are the whole crop the compositor asked for.
    """

    _kept: tuple[object, list[Strip]] | None = None
    REMEMBERED: ClassVar[int] = 0
    """How many drawings the widget remembers by what it drew them from (0: none)."""
    _remembered: dict[Hashable, tuple[list[Strip], dict[int, Strip]]] | None = None
    """Drawings by what they were drawn from: the rows handed back, and Textual's own
    cached rows right after drawing them (put back with them, so that a later repaint of a
    row or two draws only those, as after a drawing)."""

    def drawn_from(self) -> Hashable | None:
        """Everything the rows are drawn from besides the widget's size, styles, border
        titles, text selection, the theme and the line filters; None where that is not known
        (nothing is remembered). For a class with :attr:`REMEMBERED` set."""
        return None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if hooks.QUICK_ROWS:
            self._styles_cache = QuickStylesCache()  # its rows drawn in a frame found once

    def notify_style_update(self) -> None:
        self._kept = None
        self._remembered = None
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
        cache = self._styles_cache
        if not (self.REMEMBERED and hooks.REMEMBER and isinstance(cache, QuickStylesCache)):
            lines = super().render_lines(crop)
            self._kept = (key, lines)
            return lines
        remembered = self._memory_key(key)
        if remembered is not None and self._remembered is not None:
            drawing = self._remembered.get(remembered)
            if drawing is not None:
                lines, cached = drawing
                cache.put_back(cached, self.region.width)
                self._kept = (key, lines)
                return lines
        lines = super().render_lines(crop)
        self._kept = (key, lines)
        if remembered is not None:
            memory = self._remembered = self._remembered or {}
            drawn = (lines, cache.cached_rows(crop.line_range))
            recall(memory, remembered, lambda: drawn, self.REMEMBERED)
        return lines

    def _memory_key(self, key: Hashable) -> Hashable | None:
        source = self.drawn_from()
        if source is None:
            return None
        try:
            selection = self.text_selection
        except NoScreen:  # being removed (a lesson reloaded): drawn, not remembered
            return None
        styles = self.styles
        own = [(rule, value) for rule, value in styles.inline.get_rules().items()]
        drawn_rules = tuple(sorted(item for item in own if item[0] not in LAYOUT_RULES))
        memory_key = (
            key,
            source,
            styles.base._updates,  # a base style animated or set outside the stylesheet
            drawn_rules,
            content_key(self._border_title),
            content_key(self._border_subtitle),
            selection,
        )
        try:
            hash(memory_key)
        except TypeError:  # a style value that cannot be a key: draw, remember nothing
            return None
        return memory_key


class KeptText(Kept):
    """A kept ``Static`` (listed after it) that remembers its last drawings by its text."""

    REMEMBERED = 16

    def drawn_from(self) -> Hashable | None:
        return content_key(getattr(self, "content", None))


class KeptBlank(Kept):
    """A kept container (listed after the Textual class) that remembers its last drawings:
    it draws no content of its own, so they differ only in size, styles and border titles."""

    REMEMBERED = 8

    def drawn_from(self) -> Hashable | None:
        return () if type(self).render is Widget.render else None
