"""The reference's table of the built-in variants' option defaults is their declarations.

docs/reference.md states each built-in variant's options and defaults; written by hand, it is
checked here against the ``Option`` declarations that ``attn plugins`` prints and the
variants run with, so it cannot drift from them.
"""

from __future__ import annotations

import re
from pathlib import Path

from tracer.plugin_host import PluginHost

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def documented() -> dict[str, dict[str, str]]:
    """variant -> option -> the default as the table writes it (before any parenthesis)."""
    text = REFERENCE.read_text(encoding="utf-8")
    section = text.split("### The built-in variants' options", 1)[1].split("\n## ", 1)[0]
    table: dict[str, dict[str, str]] = {}
    for line in section.splitlines():
        row = re.match(r"\| `([a-z-]+)` \| (.*) \|$", line)
        if row is None:
            continue
        cell = re.sub(r"\(\[.*?\]\(.*?\)\)", "", row.group(2))  # links to where they are explained
        options = re.findall(r"`([a-z_]+)` ([^,(]+)", cell)
        table[row.group(1)] = {name: value.strip() for name, value in options}
    return table


def shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if value != "" else "none"


def test_every_built_in_option_is_listed_with_its_declared_default() -> None:
    host = PluginHost(use_env=False)
    declared = {
        name: {option.name: shown(option.default) for option in variant.options}
        for name, variant in host.variants.items()
        if variant.options
    }
    assert documented() == declared
