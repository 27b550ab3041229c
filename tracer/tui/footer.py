"""The footer: the screen's keys as one line, drawn by one widget.

Textual's ``Footer`` is a container with a widget per key. Whenever the keys change (a
quiz takes the focus, a step enables "Loop end"), it measures, lays out and draws each key
widget again, and its keys rebuild themselves in frames of their own. That was a third or
more of a lesson key press (``benchmarks/README.md``). Here the keys are one line of text: a
change draws one row and needs no layout. It looks and behaves like Textual's footer: the
same theme variables, the compact style, the palette's key at the right edge, hover, click,
tooltips and dimmed disabled keys. Bindings in a group show their keys together, followed
by the group's description, as Textual shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, ClassVar, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from tracer.sanitize import visible
from tracer.tui.kept import recall

if TYPE_CHECKING:
    from textual.screen import Screen


@dataclass(frozen=True)
class FooterKey:
    """One key as the footer shows it, or a group's description (a key with no ``key``)."""

    key: str
    """What a click presses ("" for a group's description, which does nothing)."""
    display: str
    """The key as shown ("→", "^p")."""
    description: str
    enabled: bool = True
    tooltip: str = ""
    group: Literal["", "first", "inside", "label"] = ""
    """Where it stands in a group of keys shown together: the group's first key, another
    of its keys, or its description after them ("": no group)."""
    tight: bool = False
    """A compact group (``Binding.Group(compact=True)``): its keys side by side."""


@dataclass(frozen=True)
class Placed:
    """A key where it was drawn: cells ``start`` up to ``end`` of the line."""

    start: int
    end: int
    key: FooterKey


KEPT_LINES = 8
"""Drawings of the footer kept (the oldest goes first)."""


class FooterLine(Widget, can_focus=False):
    """The bindings the screen offers now, in one row at the bottom."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "footer-line--key",
        "footer-line--description",
        "footer-line--item",
        "footer-line--hover",
        "footer-line--edge",
    }
    DEFAULT_CSS = """
    FooterLine {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        & > .footer-line--item { background: $footer-item-background; }
        & > .footer-line--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer-line--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .footer-line--hover { background: $block-hover-background; }
        & > .footer-line--edge { color: $foreground 20%; }
    }
    """

    compact = reactive(False)
    """Keys closer together (the screen sets it below a width)."""
    show_command_palette = reactive(True)
    """The palette's key at the right edge."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._keys: tuple[FooterKey, ...] = ()
        self._palette: FooterKey | None = None
        self._placed: list[Placed] = []
        self._hover: int | None = None
        """Index in ``_placed`` of the key under the mouse."""
        self._scroll = 0
        """Cells scrolled off at the left (a mouse wheel moves keys that do not fit)."""
        self._parts: dict[bool, dict[str, Style]] | None = None
        self._drawn: dict[tuple[object, ...], tuple[Strip, list[Placed], int]] = {}
        """What the line showed -> the line, where its keys are, the scroll: the last few, as
        a lesson goes back and forth between a few sets of keys (a quiz's and a table's)."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.sync()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is self.screen:
            self.sync()

    def sync(self) -> None:
        """Show the screen's bindings now; draws again only if they changed.

        A screen may call this while it draws, so that new keys land in the same frame.
        """
        if not self.is_attached:
            return
        keys, palette = self.wanted()
        if (keys, palette) != (self._keys, self._palette):
            self._keys, self._palette = keys, palette
            self._hover = None  # the keys moved: the next mouse move finds the one under it
            self.tooltip = None
            self.refresh()

    def wanted(self) -> tuple[tuple[FooterKey, ...], FooterKey | None]:
        """The keys to show (one per action, as Textual's footer shows them) and the palette's.

        A key's name can come from the learner's keymap file: every word shown passes the
        sanitiser (a control character is drawn as a picture, never sent to the terminal).
        """
        app = self.app

        def display(binding: Binding) -> str:
            return visible(app.get_key_display(binding), multiline=False)

        def said(text: str) -> str:
            return visible(text, multiline=False)

        active = self.screen.active_bindings
        by_action: dict[str, list[tuple[Binding, bool, str]]] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show:
                by_action.setdefault(binding.action, []).append((binding, enabled, tooltip))
        keys: list[FooterKey] = []
        # Consecutive actions of one group show together, as in Textual's footer.
        for group, runs in groupby(by_action.values(), lambda run: run[0][0].group):
            firsts = [run[0] for run in runs]
            if group is None or len(firsts) == 1:
                keys.extend(
                    FooterKey(b.key, display(b), said(b.description), enabled, tooltip)
                    for b, enabled, tooltip in firsts
                )
                continue
            for index, (b, enabled, tooltip) in enumerate(firsts):
                where: Literal["first", "inside"] = "inside" if index else "first"
                tip = tooltip or b.description
                keys.append(FooterKey(b.key, display(b), "", enabled, tip, where, group.compact))
            label = said(group.description)
            keys.append(FooterKey("", "", label, group="label", tight=group.compact))
        palette = None
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            found = active.get(app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, tooltip = found
                palette = FooterKey(
                    binding.key,
                    display(binding),
                    said(binding.description),
                    enabled,
                    binding.tooltip or binding.description,
                )
        return tuple(keys), palette

    def watch_compact(self) -> None:
        self.refresh()

    def watch_show_command_palette(self) -> None:
        self.sync()

    # Drawing ---------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        self._parts = None
        self._drawn.clear()
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        # The line is drawn once for each thing it shows (keys, width, hover): Textual would
        # build it as text and restyle it at every repaint, a millisecond or two a key press.
        width = self.size.width
        if y:
            return Strip.blank(width, self.rich_style)
        key = (self._keys, self._palette, width, self.compact, self._hover, self._scroll)
        line, self._placed, self._scroll = recall(self._drawn, key, self._drawing, KEPT_LINES)
        return line

    def _drawing(self) -> tuple[Strip, list[Placed], int]:
        """The line drawn anew, with where its keys are and the scroll it settled on."""
        line = self._draw(self.size.width)
        return line, self._placed, self._scroll

    def _looks(self) -> dict[bool, dict[str, Style]]:
        """Each part's style, for a key under the mouse (True) and not.

        Colours with transparency are laid over the colour behind them, as Textual lays a
        key widget's parts over its background (the hover colour, on hover); the palette's
        edge is a border, coloured over the footer's own background.
        """
        if self._parts is None:
            _, background = self.background_colors
            looks = {}
            for hover in (False, True):
                item = self.get_component_styles(
                    "footer-line--hover" if hover else "footer-line--item"
                )
                under = background + item.background
                parts = {"item": Style(bgcolor=under.rich_color)}
                for name in ("key", "description", "edge"):
                    part = self.get_component_styles(f"footer-line--{name}")
                    behind = under + part.background
                    colour = (background if name == "edge" else behind) + part.color
                    style = Style(color=colour.rich_color, bgcolor=behind.rich_color)
                    parts[name] = style + part.text_style
                looks[hover] = parts
            self._parts = looks
        return self._parts

    def _draw(self, width: int) -> Strip:
        # Segments put together by hand: one line of known pieces, where laying it out as
        # rich Text and rendering that through the console took most of a new line's time.
        looks = self._looks()
        keys: list[Segment] = []
        cells = 0
        placed: list[Placed] = []
        for index, key in enumerate(self._keys):
            start = cells
            if key.group == "first":
                keys.append(Segment(" "))  # the group's margin (or a compact group's padding)
                cells += 1
                start += 1
            for text, style in self._key_parts(
                key, looks[index == self._hover], compact=self.compact
            ):
                keys.append(Segment(text, style))
                cells += cell_len(text)
            placed.append(Placed(start, cells, key))
            gap = self._after(key, self._keys[index + 1 : index + 2])
            if gap:
                keys.append(Segment(" " * gap))
                cells += gap
        palette: list[Segment] = []
        if self._palette is not None:
            look = looks[self._hover == len(self._keys)]
            palette.append(Segment("▏", look["edge"]))
            palette.extend(
                Segment(text, style)
                for text, style in self._key_parts(self._palette, look, compact=True)
            )
            # As Textual's: one cell of padding in the key's colour, or compact, of margin.
            palette.append(Segment(" ", None if self.compact else look["item"]))
        palette_strip = Strip(palette)
        room = max(width - palette_strip.cell_length, 0)
        self._scroll = scroll = max(0, min(self._scroll, cells - room))
        left = Strip(keys, cells).crop(scroll, scroll + room)
        line = Strip.join([left.extend_cell_length(room), palette_strip])
        self._placed = [Placed(p.start - scroll, p.end - scroll, p.key) for p in placed]
        if self._palette is not None:
            self._placed.append(Placed(room, width, self._palette))
        return line.crop(0, width).apply_style(self.rich_style)

    def _after(self, key: FooterKey, following: tuple[FooterKey, ...]) -> int:
        """Blank cells after a key, in the footer's colour: the margins Textual's footer
        puts around its key widgets (collapsed between a group's keys)."""
        if key.group in ("first", "inside"):
            last = not following or following[0].group == "label"
            return 1 if (last or not key.tight) else 0
        if key.group == "label":
            return 0 if self.compact else 1
        return 1 if self.compact else 0

    @staticmethod
    def _key_parts(
        key: FooterKey, look: dict[str, Style], *, compact: bool
    ) -> list[tuple[str, Style]]:
        """A key's pieces of text and their styles (its name, its description)."""
        dim = Style() if key.enabled else Style(dim=True)
        pad = "" if compact else " "
        if not key.key:  # a group's description
            return [(key.description, look["description"] + dim)]
        if not key.description:
            return [(key.display, look["key"] + dim)]
        return [
            (f"{pad}{key.display}{pad}", look["key"] + dim),
            (f"{' ' if compact else ''}{key.description}{pad}", look["description"] + dim),
        ]

    # The mouse -------------------------------------------------------------------------

    def _key_at(self, x: int) -> int | None:
        for index, place in enumerate(self._placed):
            if place.start <= x < place.end and place.key.key:
                return index
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        index = self._key_at(event.x)
        if index != self._hover:
            self._hover = index
            self.tooltip = self._placed[index].key.tooltip or None if index is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        index = self._key_at(event.x)
        if index is None:
            return
        key = self._placed[index].key
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._scroll_by(4, event)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._scroll_by(-4, event)

    def _scroll_by(self, cells: int, event: events.MouseEvent) -> None:
        before = self._scroll
        self._scroll = max(0, self._scroll + cells)  # the next drawing clamps it
        if self._scroll != before:
            self.refresh()
            event.stop()
