"""A Static for text that changes at every step, without re-laying-out the screen each time.

``Static.update`` asks for a layout pass by default, which makes Textual
reflow and repaint the whole screen. When the new text wraps to as many lines
as the old one, the widget's size cannot change, so a plain repaint is enough:
that is what keeps a key press to a single small update.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import Static

from tracer.sanitize import visible
from tracer.tui.kept import KeptText, content_key
from tracer.tui.steady import SteadySize


class TextPane(Static, SteadySize, KeptText):
    """Literal text (never markup) that repaints in place when its height stays the same."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, markup=False)
        self._lines = -1
        self._width = -1
        self._shown: Text | None = None

    @property
    def line_count(self) -> int:
        """Lines the text took when last shown (0 before it was)."""
        return max(self._lines, 0)

    def show(self, text: Text) -> None:
        if visible(text.plain) != text.plain:  # a token's escape sequence: shown, not run
            text = Text(visible(text.plain))
        width = self.content_region.width
        if self._shown is not None and same_text(self.content, text):
            # Told again what it shows (a table's formula, step after step): nothing to draw
            # or lay out, and the rows it keeps stay kept. Only the count of its lines
            # follows a new width.
            if width > 0 and width != self._width:
                self._lines = len(text.wrap(self.app.console, width)) if text.plain else 0
                self._width = width
            return
        lines = len(text.wrap(self.app.console, width)) if width > 0 and text.plain else 0
        previous = self._lines
        if width != self._width and width > 0 and self._shown is not None:
            # Last shown at another width (or while just made visible, at none): the layout
            # since then gave the pane the height of that text at this width.
            shown = self._shown
            previous = len(shown.wrap(self.app.console, width)) if shown.plain else 0
        # A height held by min-height (the loop's position text) does not change with the text.
        held = self.styles.min_height
        floor = int(held.value) if held is not None and held.is_cells else 0
        same = width > 0 and max(lines, floor) == max(previous, floor)
        self._lines, self._width, self._shown = lines, width, text
        self.update(text, layout=not same)


class ProsePane(Static, SteadySize, KeptText):
    """A lesson author's prose, shown as written: plain text, wrapped, nothing interpreted
    but code quoted in backticks, which is drawn as code (in bold, without its backticks).

    The lesson format promises narration is shown literally (``The <mask> token``,
    ``a*b*c`` and ``[b]`` stay as typed); backticks are the one markup prose uses
    (``attn lesson check`` reports the rest), and ``attn lesson run --plain`` keeps
    them, as plain text quotes code.
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, markup=False)
        self.text = ""

    def show(self, text: str) -> None:
        if text == self.text:
            return
        self.text = text
        self.update(code_spans(visible(text)))  # escape sequences are shown, not run


def same_text(shown: object, text: Text | str) -> bool:
    """Whether ``text`` would show what ``shown`` (a widget's content) shows: the same
    characters in the same styles, wrapped the same way (one fingerprint with the drawings
    a widget remembers, :func:`~tracer.tui.kept.content_key`)."""
    key = content_key(text)
    return key is not None and key == content_key(shown)


CODE_SPAN = re.compile(r"`([^`\n]+)`")
"""Code quoted in backticks within a line of prose."""


def code_spans(text: str) -> Text:
    """``text`` with each code span in backticks drawn in bold, its backticks dropped."""
    shown = Text()
    last = 0
    for match in CODE_SPAN.finditer(text):
        shown.append(text[last : match.start()])
        shown.append(match.group(1), style="bold")
        last = match.end()
    shown.append(text[last:])
    return shown
