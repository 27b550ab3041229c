"""Colours the app draws itself (heatmaps, source tints), taken from the current theme."""

from __future__ import annotations

from weakref import WeakKeyDictionary

from textual.app import App
from textual.color import Color
from textual.widget import Widget

_resolved: WeakKeyDictionary[App[object], tuple[str, tuple[Color, Color, Color]]] = (
    WeakKeyDictionary()
)
"""Per app, the theme last resolved and its colours: resolving the theme's CSS variables
takes about 0.3 ms, and panes ask again whenever their styles are updated (most steps)."""


def theme_colours(widget: Widget) -> tuple[Color, Color, Color]:
    """Surface, text and accent of the current theme, as Textual resolved them.

    A theme may leave ``surface`` or ``foreground`` unset (light themes often
    do); the resolved CSS variables always hold a value that fits the theme.
    """
    app = widget.app
    known = _resolved.get(app)
    if known is not None and known[0] == app.theme:
        return known[1]
    variables = app.get_css_variables()
    base = Color.parse(variables.get("surface") or variables.get("background") or "#1e1e1e")
    text = Color.parse(variables.get("foreground") or variables.get("text") or "#e0e0e0")
    accent = Color.parse(variables.get("accent") or variables.get("primary") or "#ffa62b")
    _resolved[app] = (app.theme, (base, text, accent))
    return base, text, accent
