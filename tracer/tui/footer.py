"""A footer that changes its keys in place, in the same frame as the step that changed them.

Textual's ``Footer`` rebuilds itself (removes every key and mounts new ones) after the
frame in which the bindings changed, whether or not what it shows changed: three more
layout passes and frames each time the focus moves. Here the keys are a fixed set of
widgets whose text is changed when what they show changes, and a screen can ask for that
while it draws a step (:meth:`SteadyFooter.sync`), so the new keys land in the step's own
layout pass and frame. Bindings in a group (``Binding.group``) are left to Textual's own way.

The key widget (``FooterKey``) and the footer's readiness flag are Textual's private
parts: where they are not as expected, or the speed-ups are off
(:mod:`tracer.tui.textual_hooks`), this is Textual's footer unchanged.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import Footer

from tracer.tui import textual_hooks as hooks
from tracer.tui.kept import recall
from tracer.tui.steady import SteadySize

try:  # a private module of Textual's: without it, Textual's own footer
    from textual.widgets._footer import FooterKey

    FOUND = hasattr(Footer, "_bindings_ready") and hasattr(FooterKey, "on_mouse_down")
except ImportError:  # pragma: no cover - another Textual
    FooterKey = Footer  # type: ignore[assignment,misc]  # never made: FOUND is False
    FOUND = False

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.screen import Screen

KEYS = 16
"""Key widgets made with the footer; more bindings than this rebuild it the usual way."""

DRAWN_KEYS = 8
"""Drawings (and widths) each footer key keeps: the last things it showed."""

Shown = tuple[str, str, str, str, bool, str]
"""One key as the footer shows it: key, its display, description, action, enabled, tooltip."""


class SteadyKey(FooterKey, SteadySize):
    """A footer key laid out once when its text changes (see :class:`SteadySize`).

    It also keeps the rows it drew for the last few things it showed: moving into a quiz
    and out of it changes every key and back (the quiz's keys come first), and drawing a
    key anew costs about a quarter of a millisecond, some 2–3 ms a step for the footer.
    The rows are reused only for the same text, state, style (hover and disabled
    included), size, theme and filters; any restyle forgets them. Its width, which the
    layout pass measures by drawing the text, is kept the same way.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before Textual's __init__, which may restyle the key (and so empty them).
        self._drawn: dict[tuple[object, ...], list[Strip]] = {}
        self._widths: dict[tuple[object, ...], int] = {}
        """Widths measured for the last few texts: the layout pass measures every key anew."""
        super().__init__(*args, **kwargs)

    def notify_style_update(self) -> None:
        self._drawn.clear()
        self._widths.clear()
        super().notify_style_update()

    def get_content_width(self, container: Size, viewport: Size) -> int:
        if not hooks.hooks_on():
            return super().get_content_width(container, viewport)
        key = (self.key_display, self.description, self.compact, container, viewport)
        measure = partial(super().get_content_width, container, viewport)
        return recall(self._widths, key, measure, DRAWN_KEYS)

    def render_lines(self, crop: Region) -> list[Strip]:
        if not (hooks.ROWS and hooks.hooks_on()):
            return super().render_lines(crop)
        key = (
            crop,
            self.size,
            self.key_display,
            self.description,
            self._disabled,
            self.compact,
            self.rich_style,
            self.background_colors,
            self.app.theme,
            tuple(map(id, self.get_line_filters())),
        )
        return recall(self._drawn, key, partial(super().render_lines, crop), DRAWN_KEYS)


class SteadyFooter(Footer):
    """``Footer`` whose keys are changed in place, only when what it shows changes."""

    def __init__(self) -> None:
        super().__init__()
        self._shown: tuple[Shown, ...] | None = None

    def _wanted(self) -> tuple[Shown, ...] | None:
        """What the footer should show now (None: grouped bindings, Textual's compose)."""
        seen: dict[str, Shown] = {}
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            if binding.action not in seen:  # one key per action, as Textual's footer does
                display = self.app.get_key_display(binding)
                seen[binding.action] = (
                    binding.key,
                    display,
                    binding.description,
                    binding.action,
                    enabled,
                    tooltip,
                )
        return tuple(seen.values())

    def steady(self) -> bool:
        """Whether keys are changed in place: Textual's parts found, speed-ups on, and not in
        the browser. Under textual-serve's web driver the lesson screen with this footer
        failed to mount (its panes not found, tests/web/test_browser.py); the cause is not
        known yet, so the browser gets Textual's own footer."""
        return FOUND and hooks.hooks_on() and not self.app.is_web

    def compose(self) -> ComposeResult:
        wanted = self._wanted() if self._bindings_ready and self.steady() else None
        if wanted is None or len(wanted) > KEYS:
            self._shown = None
            yield from super().compose()
            return
        self._shown = wanted
        self.styles.grid_size_columns = len(wanted)
        for index in range(KEYS):
            key = SteadyKey("", "", "", "").data_bind(compact=Footer.compact)
            self._fill(key, wanted[index] if index < len(wanted) else None)
            yield key
        yield from (
            child
            for child in super().compose()
            if isinstance(child, FooterKey) and child.has_class("-command-palette")
        )

    @staticmethod
    def _fill(key: FooterKey, shown: Shown | None) -> None:
        if shown is None:
            key.display = False
            return
        key.key, key.key_display, key.description, key.action, enabled, tooltip = shown
        key._disabled = not enabled  # what a click on it checks
        key.set_class(not enabled, "-disabled")
        key.tooltip = tooltip or None
        key.display = True
        key.refresh(layout=True)

    def sync(self) -> None:
        """Show the screen's bindings now, changing only the keys that differ."""
        if not self.is_attached or not self.steady():
            return
        self._bindings_ready = True
        wanted = self._wanted()
        if wanted == self._shown:
            return
        keys = [child for child in self.children if isinstance(child, FooterKey)]
        palette = [key for key in keys if key.has_class("-command-palette")]
        keys = [key for key in keys if key not in palette]
        palette_wanted = self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE
        if (
            wanted is None
            or self._shown is None
            or len(wanted) > len(keys)
            or bool(palette) != palette_wanted  # the first time, or the width crossed TINY
        ):
            self.call_after_refresh(self.recompose)  # Textual's way, in the next frame
            return
        self._shown = wanted
        if self.styles.grid_size_columns != len(wanted):  # a style set asks for a layout
            self.styles.grid_size_columns = len(wanted)
        for index, key in enumerate(keys):
            self._fill(key, wanted[index] if index < len(wanted) else None)
        if hooks.CHECK_REFRESH:
            # Each key (and the palette's, restyled with the footer) asks for its layout at its
            # own next idle, after the screen has laid the step out with the footer's old
            # arrangement: a second layout pass and frame. Handing the requests over now (the
            # private hook Textual's idle calls) puts the new keys in the step's own pass.
            for key in (*keys, *palette):
                key._check_refresh()

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.steady() and screen.app.app_focus and screen is self.screen:
            self.sync()
        else:
            super().bindings_changed(screen)
