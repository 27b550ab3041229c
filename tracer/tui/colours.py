"""Colours the app draws itself (heatmaps, source tints), taken from the current theme."""

from __future__ import annotations

from textual.color import Color
from textual.widget import Widget


def theme_colours(widget: Widget) -> tuple[Color, Color, Color]:
    """Surface, text and accent of the current theme, as Textual resolved them.

    A theme may leave ``surface`` or ``foreground`` unset (light themes often
    do); the resolved CSS variables always hold a value that fits the theme.
    """
    variables = widget.app.get_css_variables()
    base = Color.parse(variables.get("surface") or variables.get("background") or "#1e1e1e")
    text = Color.parse(variables.get("foreground") or variables.get("text") or "#e0e0e0")
    accent = Color.parse(variables.get("accent") or variables.get("primary") or "#ffa62b")
    return base, text, accent
