"""Panes that are laid out once per key press, not twice.

Textual (8.2, tested with 8.2.8) gives every widget whose size changed
during a layout pass a new ``virtual_size``, and that reactive asks for another
layout of the whole screen. For a pane without scrollbars of its own the second
pass finds nothing to move: the first one already sized its children at the new
size (``height: auto`` included). It costs a second arrangement and a second frame
on every step whose panes change size, which is most changes of step kind (a
narration takes the whole width, a quiz adds its question): about a third of such
a key press.

:class:`SteadySize` lays such a pane out once. The new size still reaches the
widget (it is repainted, it gets its Resize event), and a scrolling container
still updates its scrollbars: showing or hiding one asks for a layout of its own.
Only the layout that the size change alone would have asked for is skipped.
``tests/tui/test_steady.py`` checks that a change of step kind is laid out once
and that what is drawn equals a screen laid out from scratch.

Each override here is of a hook Textual keeps private, so each is defined only
where :mod:`tracer.tui.textual_hooks` found that hook as expected, and passes
straight through to Textual while the speed-ups are off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Self, cast

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.dom import NoScreen
from textual.errors import NoWidget
from textual.geometry import Region, Size
from textual.map_geometry import MapGeometry
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

from tracer.tui import textual_hooks as hooks
from tracer.tui.backdrop import Backdrop
from tracer.tui.kept import Kept, KeptBlank, KeptText, recall

# Textual's compositor is private: where it is missing, SteadyCompositor is never used.
if hooks.FULL_MAP:
    from textual._compositor import Compositor, ReflowResult
else:  # pragma: no cover - a Textual without that compositor: the screen keeps its own
    Compositor = object  # type: ignore[misc,assignment]
    ReflowResult = object  # type: ignore[misc,assignment]


class SteadyCompositor(Compositor):
    """A compositor whose layout pass arranges the screen once.

    A scroll marks the map of every widget out of date (Textual's private
    ``_full_map_invalidated``). The layout pass then builds that map anew but leaves
    the mark, so the next lookup of a widget's place arranged the whole screen a
    second time, and a lookup made during the pass itself (a scrollbar given its new
    length asks for its size) a third: 1–2 ms of a change of step kind. Here the pass
    looks places up in the map it replaces (what Textual does when no scroll came
    between two passes), and the map it builds counts as current.
    """

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        if not (hooks.FULL_MAP and hooks.hooks_on()):
            return super().reflow(parent, size)
        self._full_map_invalidated = False
        result = super().reflow(parent, size)
        self._full_map_invalidated = False
        return result

    def _render_chops(
        self, crop: Region, is_rendered_line: Callable[[int], bool]
    ) -> Sequence[Mapping[int, Strip]]:
        """Textual's frame, less the widgets that the widgets in front of them hide.

        Textual asks every widget in the repainted box for its rows, front to back, and
        keeps the first piece that lands in each span of a row: a container wholly
        covered by its children (the screen, a row of columns, a switcher showing one
        pane) is drawn, cut at every span and thrown away. Here a widget is drawn only if
        some span of its box is still empty, which leaves every piece of the frame as
        Textual would have put it there.
        """
        if not (hooks.CHOPS and hooks.hooks_on()):
            return super()._render_chops(crop, is_rendered_line)
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(line[:-1]) for line in cuts]
        for widget, (region, clip) in self.visible_widgets.items():
            if crop and not crop.overlaps(clip):
                continue
            shown = region.intersection(clip)
            x, y, width, height = shown
            if not (width and height):
                continue
            first_cut, last_cut = x, x + width
            lines = [line for line in range(y, y + height) if is_rendered_line(line)]
            if all(
                chops[line][cut] is not None
                for line in lines
                for cut in cuts[line]
                if first_cut <= cut < last_cut
            ):
                continue  # every span it would fill is filled: nothing of it would show
            strips = widget.render_lines(Region(x - region.x, y - region.y, width, height))
            # A widget may hand back fewer rows, or a row may end short: Textual keeps what came.
            for line, strip in zip(shown.line_range, strips, strict=False):
                if not is_rendered_line(line):
                    continue
                chops_line = chops[line]
                final_cuts = [cut for cut in cuts[line] if last_cut >= cut >= first_cut]
                pieces = strip.divide([cut - x for cut in final_cuts[1:]])
                for cut, piece in zip(final_cuts, pieces, strict=False):  # the last cut ends it
                    if chops_line.get(cut) is None:
                        chops_line[cut] = piece
        return cast("Sequence[Mapping[int, Strip]]", chops)


def placement(widget: Widget) -> MapGeometry | None:
    """Where the screen's last layout put ``widget`` (region and clip), or None where it did
    not place it (a hidden column's pane, a widget not mounted yet)."""
    try:
        return widget.screen.find_widget(widget)
    except (NoWidget, NoScreen):
        return None


def inside_shown(widget: object) -> bool:
    """Whether no widget around ``widget`` is hidden (its own display aside): only then can a
    frame show it, now or once it is shown itself."""
    if not isinstance(widget, Widget):
        return True
    return all(node.display for node in widget.ancestors if isinstance(node, Widget))


class SteadySize(Widget):
    """A widget whose change of size alone does not ask for a second layout pass.

    A mixin: list it after the Textual class (``class Column(Vertical, SteadySize)``),
    so that CSS type selectors and default styles still follow the Textual class.
    Not for widgets that watch their ``virtual_size`` (the watcher would not run) or
    that scroll content of their own (a ``ScrollView`` keeps its own virtual size).
    """

    if hooks.SIZE_UPDATED:

        def _size_updated(
            self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
        ) -> bool:
            # Overrides a private hook of Textual's: the one place that asks for the second
            # pass. ``layout=False`` stores the new virtual size without a layout request.
            if hooks.hooks_on():
                layout = False
            return super()._size_updated(size, virtual_size, container_size, layout=layout)


class Column(Vertical, SteadySize, KeptBlank, Backdrop):
    """A ``Vertical`` laid out once per change, each kind of blank row drawn once."""


class Row(Horizontal, SteadySize, KeptBlank, Backdrop):
    """A ``Horizontal`` laid out once per change, each kind of blank row drawn once."""


class ScrollColumn(VerticalScroll, SteadySize, KeptBlank, Backdrop):
    """A ``VerticalScroll`` laid out once per change (its scrollbars still ask for their own)."""


class Switcher(ContentSwitcher, SteadySize, KeptBlank, Backdrop):
    """A ``ContentSwitcher`` laid out once per change, each kind of blank row drawn once."""


class Label(Static, SteadySize, KeptText):
    """A ``Static`` laid out once per change (a new text that needs more lines still asks)."""


BAR_DRAWINGS = 16
"""Looks a scrollbar keeps drawn (the oldest goes first)."""


class SteadyScrollBar(ScrollBar, SteadySize):
    """A ``ScrollBar`` laid out once per change, and painted once.

    A scrollbar has no children, so the layout its new size asks for moves
    nothing; it is the second pass left on a step that brings the code pane back.
    That same layout sets the bar's new window and position, which asks for a
    repaint; the request reaches the screen only after the layout's frame. When
    that frame placed the bar anew (shown, moved or resized), the compositor sent
    the bar's whole region, painted with those values, and the request would cost
    a second frame that changes nothing: it is dropped. Any other request (a hover,
    a scroll, a paint of part of the bar) goes through as Textual sends it.
    """

    _placed_at: Region | None = None
    """Where the last layout pass placed the bar."""
    _rows_checked: ClassVar[set[tuple[object, ...]]] = set()
    """Looks of a bar (width, theme, filters, the bar's style) whose rows Textual was seen to
    draw as the renderer's runs in the bar's style (see :meth:`_draw`): true of every bar that
    looks so, so the first one seen in a look vouches for the rest."""
    _placed_anew = False
    """The last layout pass placed the bar where it was not (so its frame sends all of it)."""
    _painted_since_refresh = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._drawings: dict[tuple[object, ...], list[Strip]] = {}
        """What the bar looked like -> its rows (see :meth:`_drawn`)."""
        self._rows_vary = False
        """A row was more than its run in the bar's style: rows are not put together again."""

    if hooks.SIZE_UPDATED and hooks.CHECK_REFRESH:

        def _size_updated(
            self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
        ) -> bool:
            # Called for every widget the layout pass placed, after the compositor's new map.
            if hooks.hooks_on():
                placed = placement(self)
                region = placed.region if placed is not None else None
                self._placed_anew = region is not None and region != self._placed_at
                self._placed_at = region
            return super()._size_updated(size, virtual_size, container_size, layout)

        def _check_refresh(self) -> None:
            # Overrides Textual's private hook that turns a repaint request into an Update
            # message. Only a frame that followed _size_updated above sets the flag.
            if self._painted_since_refresh:
                self._repaint_required = False
                self._painted_since_refresh = False
            super()._check_refresh()

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        self._painted_since_refresh = False
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def notify_style_update(self) -> None:
        self._drawings.clear()
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = self._drawn(crop)
        whole = crop.width >= self.size.width and crop.height >= self.size.height
        if whole and self._placed_anew:
            self._painted_since_refresh = True
        self._placed_anew = False  # one frame: the one that followed the layout pass
        return lines

    def _drawn(self, crop: Region) -> list[Strip]:
        """The bar's rows, drawn once for each look it has had lately (a lesson's steps go
        back and forth between a few files and tables, each bar at its own place)."""
        if not hooks.hooks_on():
            return super().render_lines(crop)
        bar = self.render()
        if not isinstance(bar, ScrollBarRender):
            return super().render_lines(crop)
        # Everything the drawing is made from: what the renderer is given (its style holds
        # the hover and grab colours), where the rows are cut, the theme and the filters.
        look = (bar.virtual_size, bar.window_size, bar.position, bar.thickness, bar.vertical)
        filters = tuple(map(id, self.get_line_filters()))
        key = (*look, bar.style, crop, self.size, self.app.theme, filters)
        return recall(self._drawings, key, partial(self._draw, bar, crop, filters), BAR_DRAWINGS)

    def _draw(self, bar: ScrollBarRender, crop: Region, filters: tuple[int, ...]) -> list[Strip]:
        """A look not drawn lately, put together without Textual: a bar's rows are runs of the
        renderer (track, thumb, the thumb's two ends), and Textual draws each run in the bar's
        own style under the run's. That is checked on Textual's first drawing of the bar in
        each theme and width; a row that is anything else turns this off for good."""
        cuts = self._row_cuts(bar)
        if cuts is None or crop.x or crop.width != self.size.width:
            return super().render_lines(crop)
        base = self.rich_style
        where = (self.size.width, self.app.theme, filters, base)
        wanted = cuts[crop.y : crop.bottom]
        if where in self._rows_checked:
            # A bar's rows are a few runs repeated (track, thumb, its ends): each look is laid
            # over the bar's style once, not once a row.
            looks: dict[Style | None, Style] = {}
            rows = []
            for cut in wanted:
                look = looks.get(cut.style)
                if look is None:
                    look = looks[cut.style] = base + cut.style
                rows.append(Strip([Segment(cut.text, look)]))
            return rows
        drawn = super().render_lines(crop)
        for cut, strip in zip(wanted, drawn, strict=True):
            runs = list(strip)
            if len(runs) != 1 or runs[0] != Segment(cut.text, base + cut.style):
                self._rows_vary = True
                return drawn
        if len(self._rows_checked) >= BAR_DRAWINGS:
            self._rows_checked.clear()
        self._rows_checked.add(where)
        return drawn

    def _row_cuts(self, bar: ScrollBarRender) -> list[Segment] | None:
        """What Textual's renderer makes of each row of this vertical bar (the renderer's own
        ``render_bar``, given what its ``__rich_console__`` gives it), or None where rows
        may be more than that: a horizontal bar, a border or padding, another renderer."""
        if (
            self._rows_vary
            or not bar.vertical
            or type(bar).__rich_console__ is not ScrollBarRender.__rich_console__
            or not isinstance(bar.style, Style)
            or any(self.styles.gutter)
        ):
            return None
        width, height = self.size
        made = bar.render_bar(
            size=height,
            window_size=bar.window_size,
            virtual_size=bar.virtual_size,
            position=bar.position,
            vertical=True,
            thickness=width,
            back_color=bar.style.bgcolor or RichColor.parse("#555555"),
            bar_color=bar.style.color or RichColor.parse("bright_magenta"),
        )
        cuts = list(made.segments)
        return cuts if len(cuts) == height else None


class SteadyScroll(ScrollView, Kept):
    """A ``ScrollView`` that repaints its scrollbars only when its own size changed.

    Textual hands a ``ScrollView`` the region it was given as its virtual size
    (a ``ScrollView`` keeps its own), so every layout of the screen looks like a
    change to it and repaints its scrollbar: one more frame, some 30 ms after the
    step on a busy machine, for every step that is laid out at all. Subclass it in
    place of ``ScrollView``.
    """

    _scrollbars_for: Size | None = None
    """The view's own virtual size when its scrollbars were last fitted."""

    if hooks.SIZE_UPDATED:

        def _size_updated(
            self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
        ) -> bool:
            # ScrollView._size_updated ignores the virtual size it is given (it keeps its own)
            # except to decide whether anything changed. Given its own, it compares like with
            # like; given the region, as Textual does, it refits the scrollbars, which is
            # needed whenever the view's content changed size since they were last fitted.
            own = self.virtual_size
            if own != self._scrollbars_for or not hooks.hooks_on():
                self._scrollbars_for = own
                return super()._size_updated(size, virtual_size, container_size, layout)
            return super()._size_updated(size, own, container_size, layout)

    if hooks.SCROLLBARS:
        # Textual creates a view's scrollbars on first use, always as its own ScrollBar
        # class; these two properties do what Textual's do, with the steady kind.
        @property
        def vertical_scrollbar(self) -> ScrollBar:
            if self._vertical_scrollbar is None and hooks.hooks_on():
                self._vertical_scrollbar = bar = self._steady_bar(vertical=True)
                self.app._start_widget(self, bar)
            return super().vertical_scrollbar

        @property
        def horizontal_scrollbar(self) -> ScrollBar:
            if self._horizontal_scrollbar is None and hooks.hooks_on():
                self._horizontal_scrollbar = bar = self._steady_bar(vertical=False)
                self.app._start_widget(self, bar)
            return super().horizontal_scrollbar

    def _steady_bar(self, *, vertical: bool) -> SteadyScrollBar:
        bar = SteadyScrollBar(
            vertical=vertical,
            name="vertical" if vertical else "horizontal",
            thickness=self.scrollbar_size_vertical if vertical else self.scrollbar_size_horizontal,
        )
        # Shown from the start where the view already shows one (Textual hides it, and
        # showing it in the layout pass that placed it asks for another pass).
        bar.display = self.show_vertical_scrollbar if vertical else self.show_horizontal_scrollbar
        return bar
