"""A one-line strip of stages (or lesson steps): where you are, where you have been, click to jump."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import HorizontalScroll
from textual.message import Message
from textual.widgets import Static


class TimelineItem(Static):
    """One stage or step; a click asks the timeline to jump there."""

    def __init__(self, key: str, label: str, tooltip: str | None = None) -> None:
        # Labels are stage names or author text: never parsed as markup.
        super().__init__(label, markup=False, classes="timeline-item")
        self.key = key
        if tooltip:
            self.tooltip = Text(tooltip)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(Timeline.Selected(self.key))


class Timeline(HorizontalScroll, can_focus=False):
    """Stages or steps in order; the current one is highlighted and kept in view."""

    DEFAULT_CSS = """
    Timeline {
        height: 1;
        scrollbar-size: 0 0;
        background: $panel;
    }
    Timeline > .timeline-item {
        width: auto;
        padding: 0 1;
        color: $text-muted;
    }
    Timeline > .timeline-item.-done {
        color: $text;
    }
    Timeline > .timeline-item.-current {
        background: $accent;
        color: $text-accent;
        text-style: bold;
    }
    Timeline > .timeline-item:hover {
        background: $boost;
        text-style: underline;
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

    def compose(self) -> ComposeResult:
        yield from ()

    def set_items(self, items: Iterable[tuple[str, str] | tuple[str, str, str]]) -> None:
        """Replace the items: ``(key, label)`` or ``(key, label, tooltip)``."""
        self.remove_children()
        self._items = {}
        widgets = []
        for item in items:
            key, label = item[0], item[1]
            tooltip = item[2] if len(item) > 2 else None
            widget = TimelineItem(key, label, tooltip)
            self._items[key] = widget
            widgets.append(widget)
        self.mount_all(widgets)
        self.current = None

    def set_current(self, key: str | None, done: Sequence[str] = ()) -> None:
        """Mark ``key`` as current and ``done`` as visited."""
        finished = set(done)
        for item_key, widget in self._items.items():
            widget.set_class(item_key == key, "-current")
            widget.set_class(item_key in finished and item_key != key, "-done")
        moved = key != self.current
        self.current = key
        target = self._items.get(key) if key is not None else None
        if target is not None and moved:
            # Scrolls only when the item is out of view: a scroll costs another frame.
            self.call_after_refresh(self.scroll_to_widget, target, animate=False)
