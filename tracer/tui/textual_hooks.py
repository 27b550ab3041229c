"""Which of Textual's private drawing hooks attn's speed-ups may override, decided once.

The key-press speed-ups (:mod:`tracer.tui.kept`, :mod:`tracer.tui.backdrop`,
:mod:`tracer.tui.steady`, :mod:`tracer.tui.source_view`) override methods Textual
keeps private. attn accepts a range of Textual versions, so each hook is
feature-detected when this module is imported: the method must exist with the
parameters the override was written for. A hook that is missing or changed is
not overridden at all, and Textual draws that part its own way: slower, never
wrong.

``ATTN_TEXTUAL_HOOKS=off`` in the environment turns every speed-up off (the
escape hatch if a Textual release breaks one in a way detection cannot see);
:func:`use_hooks` does the same from Python. The overrides read :func:`hooks_on`
on each call, so one process can draw with and without them (the test that
compares both screens does).
"""

from __future__ import annotations

import inspect
import os

from textual.app import App
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget

SWITCH = "ATTN_TEXTUAL_HOOKS"
"""Environment variable: ``off`` (or ``0``, ``no``, ``false``) draws with Textual's own code."""


def _takes(owner: type, name: str, *parameters: str) -> bool:
    """Whether ``owner.name`` is a function with exactly these parameters (after ``self``)."""
    method = getattr(owner, name, None)
    if not callable(method):
        return False
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return False
    return tuple(signature.parameters) == ("self", *parameters)


def _instance_has(*names: str) -> bool:
    """Whether a fresh widget carries these private attributes (set in Textual's __init__)."""
    try:
        probe = Widget()
    except Exception:  # a Textual whose widgets cannot be made outside an app: no hooks
        return False
    return all(hasattr(probe, name) for name in names)


SET_DIRTY = _takes(Widget, "_set_dirty", "regions")
"""``Widget._set_dirty(*regions)``: marks rows to draw again and empties Textual's row cache.
:class:`~tracer.tui.kept.Kept` keeps its rows only while it can see every such call."""

SIZE_UPDATED = _takes(Widget, "_size_updated", "size", "virtual_size", "container_size", "layout")
"""``Widget._size_updated(size, virtual_size, container_size, layout=True)``: the layout
pass handing a widget its size (:mod:`tracer.tui.steady`, the source pane's folding)."""

CHECK_REFRESH = _takes(Widget, "_check_refresh") and _instance_has("_repaint_required")
"""``Widget._check_refresh()`` and its ``_repaint_required`` flag: a scrollbar's repaint that
the frame before it already drew is dropped."""

SCROLLBARS = (
    isinstance(getattr(Widget, "vertical_scrollbar", None), property)
    and isinstance(getattr(Widget, "horizontal_scrollbar", None), property)
    and _takes(App, "_start_widget", "parent", "widget")
    and _instance_has("_vertical_scrollbar", "_horizontal_scrollbar")
)
"""Textual makes a view's scrollbars on first use (``_vertical_scrollbar`` and
``App._start_widget``); a steady view makes its own kind there."""

BORDER_TITLE = _instance_has("_border_title") and _takes(Widget, "render_str", "text_content")
"""``Widget._border_title``, where the ``border_title`` setter stores the title it renders:
a pane resized by the layout pass fits its title there, inside that pass's frame."""

_focused = Screen.__dict__.get("focused")
FOCUS_REPAINT = (
    isinstance(_focused, Reactive)
    and getattr(_focused, "_repaint", None) is True
    and not getattr(_focused, "_layout", True)
    and callable(getattr(Screen, "_watch_focused", None))
)
"""``Screen.focused``, a reactive that repaints the whole screen when the focus moves (the
widgets that gain and lose it are restyled and repainted on their own): a stepping screen
declares it without that repaint, so a step that moves the focus is one frame, not two."""


UNSEEN_MESSAGES = _takes(Screen, "_on_update", "message") and _takes(
    Screen, "_on_layout", "message"
)
"""``Screen._on_update(message)`` and ``Screen._on_layout(message)``, where a widget's repaint
and layout requests reach the screen: a stepping screen drops those of widgets inside a
hidden one (tables drawn ahead into panes another step hides), which no frame shows."""


def _compositor_map_flag() -> bool:
    try:
        from textual._compositor import Compositor

        return _takes(Compositor, "reflow", "parent", "size") and hasattr(
            Compositor(), "_full_map_invalidated"
        )
    except Exception:  # a Textual without this compositor: no hook
        return False


FULL_MAP = _compositor_map_flag()
"""``Compositor.reflow(parent, size)`` and its ``_full_map_invalidated`` flag: a layout pass
builds the map of every widget, but Textual leaves the flag a scroll set, so the next
lookup of a widget's place (a scrollbar sized in that very pass) arranged the whole screen
again (:class:`~tracer.tui.steady.SteadyCompositor`)."""


def _compositor_chops_flag() -> bool:
    try:
        from textual._compositor import Compositor

        compositor = Compositor()
        return (
            _takes(Compositor, "_render_chops", "crop", "is_rendered_line")
            and isinstance(getattr(Compositor, "cuts", None), property)
            and isinstance(getattr(Compositor, "visible_widgets", None), property)
            and hasattr(compositor, "_cuts")
        )
    except Exception:  # a Textual without this compositor: no hook
        return False


CHOPS = FULL_MAP and _compositor_chops_flag()
"""``Compositor._render_chops(crop, is_rendered_line)``, with the ``cuts`` and
``visible_widgets`` it reads: a frame skips the widgets that those in front of them hide
(:class:`~tracer.tui.steady.SteadyCompositor`)."""


def _styles_cache_rows() -> bool:
    try:
        from textual._border import get_box
        from textual._segment_tools import line_pad
        from textual._styles_cache import StylesCache

        parameters = (
            "styles", "y", "size", "content_size", "padding", "base_background", "background",
            "render_content_line", "border_title", "border_subtitle", "opacity", "ansi_theme",
            "native_ansi",
        )  # fmt: skip
        return (
            _takes(StylesCache, "render_line", *parameters)
            and "opacity" in inspect.signature(StylesCache.render).parameters
            and callable(get_box)
            and callable(line_pad)
            and callable(getattr(StylesCache, "get_inner_outer", None))
            and isinstance(getattr(Widget(), "_styles_cache", None), StylesCache)
        )
    except Exception:  # a Textual without these parts: no hook
        return False


QUICK_ROWS = _styles_cache_rows()
"""``StylesCache.render_line(...)`` with its parameters, ``get_box`` and ``line_pad``: the
content rows of a kept widget are put in a frame found once per drawing
(:mod:`tracer.tui.quick_rows`)."""

ROWS = _takes(Widget, "render_lines", "crop")


def _remember_flag() -> bool:
    try:
        probe = Widget()
        cache = probe._styles_cache
        return (
            isinstance(getattr(Widget, "text_selection", None), property)
            and hasattr(probe, "_border_title")
            and hasattr(probe, "_border_subtitle")
            and isinstance(getattr(probe.styles.base, "_updates", None), int)
            and callable(getattr(probe.styles.inline, "get_rules", None))
            and isinstance(getattr(cache, "_cache", None), dict)
            and isinstance(getattr(cache, "_dirty_lines", None), set)
            and isinstance(getattr(cache, "_width", None), int)
            and callable(getattr(cache, "clear", None))
        )
    except Exception:  # a Textual whose widgets cannot be made outside an app: no hook
        return False


REMEMBER = QUICK_ROWS and _remember_flag()
"""``styles.base._updates`` (Textual counts every change of a widget's base styles there),
``_border_title``/``_border_subtitle`` and ``text_selection``, what a widget's remembered
drawings are keyed by besides its content, and the row cache of ``StylesCache``
(``_cache``, ``_dirty_lines``, ``_width``), put back with a remembered drawing
(:class:`~tracer.tui.kept.Kept`)."""
"""``Widget.render_lines(crop)``, public but the compositor's: kept rows and blank bands."""

_on = os.environ.get(SWITCH, "").strip().lower() not in ("off", "0", "no", "false")


def hooks_on() -> bool:
    """Whether the speed-ups are in use (each also needs its hook detected, above)."""
    return _on


def use_hooks(on: bool) -> None:
    """Turn every speed-up on or off for widgets drawn from now on (tests, the benchmark)."""
    global _on
    _on = on


def detected() -> dict[str, bool]:
    """Each hook and whether this Textual has it as the overrides expect."""
    return {
        "_set_dirty": SET_DIRTY,
        "_size_updated": SIZE_UPDATED,
        "_check_refresh": CHECK_REFRESH,
        "scrollbars": SCROLLBARS,
        "render_lines": ROWS,
        "styles.base._updates": REMEMBER,
        "_border_title": BORDER_TITLE,
        "Screen.focused": FOCUS_REPAINT,
        "Screen._on_update/_on_layout": UNSEEN_MESSAGES,
        "Compositor._full_map_invalidated": FULL_MAP,
        "Compositor._render_chops": CHOPS,
        "StylesCache.render_line": QUICK_ROWS,
    }
