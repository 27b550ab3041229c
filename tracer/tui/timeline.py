"""A one-line strip of stages (or lesson steps): where you are, where you have been, click to jump.

Visited items carry a ✓ as well as a brighter colour, so they read the same without colour
(``NO_COLOR``, a grey terminal). When the strip is wider than the screen, a marker at each
clipped edge says how many items are out of view that way (``‹ 3``, ``12 more ›``); clicking
it scrolls that way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, HorizontalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tracer.tui.kept import KeptText
from tracer.tui.steady import SteadySize

VISITED = "✓"
"""The mark in front of a visited item: not a colour, so NO_COLOR keeps it."""
NOT_VISITED = " " * len(VISITED)
"""Holds the mark's room on an item not visited yet: an item that widened when visited would
move every item after it, and could push the last ones out of view (a layout and a frame)."""


CURRENT_STYLE = "bold $text-accent on $accent"
"""The step you are on: bold as well as a colour, so NO_COLOR still tells it apart."""
NOT_VISITED_STYLE = "dim"
"""A step not visited yet: fainter than a visited one (which also carries the ✓)."""


class TimelineItem(Static, SteadySize, KeptText):
    """One stage or step; a click asks the timeline to jump there.

    Its state (current, visited) is drawn in its text, not set as CSS classes: a class
    change restyles the item through the whole stylesheet, and two or three items change
    state at every step (about a millisecond of each key press).
    """

    def __init__(self, key: str, label: str, tooltip: str | None = None) -> None:
        super().__init__("", classes="timeline-item")
        self.key = key
        self.label = label
        self.visited = False
        self.current = False
        self.cut = False
        """Cut by an edge of the strip: drawn as blank room (the edge's marker counts it)."""
        if tooltip:
            self.tooltip = Text(tooltip)
        self._draw()

    def set_state(self, *, current: bool, visited: bool) -> None:
        """Show the item as the current step, a visited one, or neither (repainted if changed)."""
        if (current, visited) != (self.current, self.visited):
            self.current, self.visited = current, visited
            self._draw()

    def set_cut(self, cut: bool) -> None:
        """Draw the item blank while an edge of the strip cuts it (repainted if changed)."""
        if cut != self.cut:
            self.cut = cut
            self._draw()

    def _draw(self) -> None:
        # Labels are stage names or author text: never parsed as markup. The mark takes the
        # left padding's place and its room is always held, so a new state never changes the
        # item's width (no layout); the padding is text, so the current item's colours cover it.
        text = f"{VISITED if self.visited else NOT_VISITED} {self.label} "
        style = CURRENT_STYLE if self.current else "" if self.visited else NOT_VISITED_STYLE
        if self.cut:  # same width, no letters: a label cut mid-word reads as another word
            text, style = " " * len(text), ""
        self.update(Content.styled(text, style), layout=False)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(Timeline.Selected(self.key))


class TimelineMore(Static, SteadySize, KeptText):
    """How many items are out of view on one side; a click scrolls that way."""

    def __init__(self, side: str) -> None:
        super().__init__("", classes=f"timeline-more -{side}")
        self.side = side
        self.count = 0
        self.display = False

    def show_count(self, count: int) -> None:
        if count != self.count:
            self.count = count
            self.update(f"‹ {count}" if self.side == "left" else f"{count} more ›")
        self.display = count > 0

    def on_click(self, event: events.Click) -> None:
        event.stop()
        timeline = self.parent
        if isinstance(timeline, Timeline):
            timeline.page(-1 if self.side == "left" else 1)


class TimelineStrip(HorizontalScroll, can_focus=False):
    """The items, scrolled sideways by the timeline (never by a scrollbar of its own)."""

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        timeline = self.parent
        if isinstance(timeline, Timeline):
            timeline.count_hidden()

    def watch_virtual_size(self, size: object) -> None:
        # The items were laid out (or a ✓ widened them): count with their real places.
        timeline = self.parent
        if isinstance(timeline, Timeline):
            self.call_after_refresh(timeline.count_hidden)

    def on_resize(self, event: events.Resize) -> None:
        # A marker appearing narrows the strip: count again with the room that is left.
        timeline = self.parent
        if isinstance(timeline, Timeline):
            self.call_after_refresh(timeline.count_hidden)


class Timeline(Horizontal, can_focus=False):
    """Stages or steps in order; the current one is highlighted and kept in view."""

    DEFAULT_CSS = """
    Timeline {
        height: 1;
        background: $panel;
    }
    Timeline > TimelineStrip {
        width: 1fr;
        height: 1;
        scrollbar-size: 0 0;
    }
    Timeline .timeline-item {
        width: auto;
        color: $text;
    }
    Timeline .timeline-item:hover {
        background: $boost;
        text-style: underline;
    }
    Timeline > .timeline-more {
        width: auto;
        padding: 0 1;
        background: $panel-lighten-2;
        text-style: bold;
    }
    """

    class Selected(Message):
        """The learner clicked an item."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._items: dict[str, TimelineItem] = {}
        self.current: str | None = None
        self._more = (TimelineMore("left"), TimelineMore("right"))
        self._strip = TimelineStrip()

    def compose(self) -> ComposeResult:
        yield self._more[0]
        yield self._strip
        yield self._more[1]

    @property
    def items(self) -> list[TimelineItem]:
        return list(self._items.values())

    def set_items(self, items: Iterable[tuple[str, str] | tuple[str, str, str]]) -> None:
        """Replace the items: ``(key, label)`` or ``(key, label, tooltip)``."""
        self._strip.remove_children()
        self._items = {}
        widgets = []
        for item in items:
            key, label = item[0], item[1]
            tooltip = item[2] if len(item) > 2 else None
            widget = TimelineItem(key, label, tooltip)
            self._items[key] = widget
            widgets.append(widget)
        self._strip.mount_all(widgets)
        self.current = None
        self.call_after_refresh(self.count_hidden)

    def set_current(self, key: str | None, done: Sequence[str] = ()) -> None:
        """Mark ``key`` as current and ``done`` as visited."""
        finished = set(done)
        for item_key, widget in self._items.items():
            current = item_key == key
            widget.set_state(current=current, visited=item_key in finished and not current)
        moved = key != self.current
        self.current = key
        target = self._items.get(key) if key is not None else None
        if target is not None and moved:
            # Scrolls only when the item is out of view: a scroll costs another frame.
            self.call_after_refresh(self._strip.scroll_to_widget, target, animate=False)
        self.call_after_refresh(self.count_hidden)

    def page(self, direction: int) -> None:
        """Scroll a screenful of items left (-1) or right (1)."""
        strip = self._strip
        strip.scroll_to(
            x=strip.scroll_x + direction * strip.scrollable_content_region.width, animate=False
        )

    def hidden(self) -> tuple[int, int]:
        """How many items lie, wholly or in part, left and right of what is in view."""
        left = right = 0
        for _widget, side in self._sides():
            if side < 0:
                left += 1
            elif side > 0:
                right += 1
        return left, right

    def _sides(self) -> Iterable[tuple[TimelineItem, int]]:
        """Each item with where it lies: -1 (wholly or partly left of the view), 0 (in view
        whole) or 1 (wholly or partly right of it)."""
        strip = self._strip
        left_edge = strip.scroll_x
        right_edge = left_edge + strip.scrollable_content_region.width
        for widget in self._items.values():
            region = widget.virtual_region
            if region.x < left_edge:
                yield widget, -1
            elif region.right > right_edge:
                yield widget, 1
            else:
                yield widget, 0

    def count_hidden(self) -> None:
        if not self.is_mounted:
            return
        left = right = 0
        for widget, side in self._sides():
            left += side < 0
            right += side > 0
            # An item cut by an edge is counted by that edge's marker and drawn blank: its
            # label would read cut mid-word ("‹ 2 ctions").
            widget.set_cut(side != 0)
            if side and widget.key == self.current:
                # A marker that appeared narrowed the strip and cut the current item: bring
                # it back into view (when it fits at all).
                strip = self._strip
                if widget.virtual_region.width <= strip.scrollable_content_region.width:
                    self.call_after_refresh(strip.scroll_to_widget, widget, animate=False)
        for marker, count in zip(self._more, (left, right), strict=True):
            marker.show_count(count)
