"""A mkdocs hook: diagrams drawn at build time, so the site needs no network to show them.

The pages keep their diagrams as ```mermaid blocks, which GitHub draws when it shows a page;
mermaid itself is a script from a CDN, so on the site this hook draws the same diagram as
inline SVG instead. It reads the small part of mermaid the pages use, a top-down flowchart of
labelled boxes in one chain (``flowchart TD``, ``id["label<br/>more"]``, ``a --> b --> c``), and
refuses anything else, failing the build rather than showing the diagram's source as text.

It also writes the docstrings' Sphinx roles (``:class:`X```) as plain code, and fails the
build where a code span on a page renders a literal ``\\|`` (Python-Markdown
keeps the backslash of an escaped table pipe inside code; write ``<code>a&#124;b</code>``).

mkdocs.yml names this file under ``hooks:``; tests/core/test_docs.py imports it as a module.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

FENCE = re.compile(r"^```mermaid\n(.*?)^```\n", re.S | re.M)
NODE = re.compile(r'^(\w+)\["([^"]*)"\]$')
CHAIN = re.compile(r"^\w+(?:\s*-->\s*\w+)+$")

WIDTH = 540
BOX_WIDTH = 500
LINE = 20  # the height of a line of text in a box
PAD = 10  # between a box's edge and its text
GAP = 30  # between two boxes, where the arrow is


class DiagramError(ValueError):
    """A mermaid block this hook cannot draw: the message says what it met."""


@dataclass(frozen=True)
class Box:
    name: str
    lines: tuple[str, ...]


def read_flowchart(source: str) -> list[Box]:
    """The boxes of a one-chain top-down flowchart, from the top."""
    lines = [line.strip() for line in source.strip().splitlines() if line.strip()]
    if not lines or lines[0] != "flowchart TD":
        raise DiagramError(f"only 'flowchart TD' is drawn, not {lines[:1]!r}")
    labels: dict[str, tuple[str, ...]] = {}
    order: list[str] = []
    for line in lines[1:]:
        node = NODE.match(line)
        if node:
            labels[node.group(1)] = tuple(re.split(r"<br\s*/?>", node.group(2)))
        elif CHAIN.match(line):
            if order:
                raise DiagramError("only one chain of arrows is drawn")
            order = re.split(r"\s*-->\s*", line)
        else:
            raise DiagramError(f"cannot draw the line {line!r}")
    missing = [name for name in order if name not in labels]
    if missing or not order:
        raise DiagramError(f"boxes without a label: {missing}" if missing else "no arrows")
    if len(set(order)) != len(order) or set(labels) != set(order):
        raise DiagramError("each box must appear once in the chain")
    return [Box(name, labels[name]) for name in order]


def draw(boxes: list[Box], title: str) -> str:
    """Inline SVG of the boxes from top to bottom, an arrow between each two. Colours come
    from the text around it (``currentColor``), so it reads in the light and the dark theme."""
    parts = []
    y = 1
    left = (WIDTH - BOX_WIDTH) / 2
    middle = WIDTH / 2
    for index, box in enumerate(boxes):
        height = 2 * PAD + LINE * len(box.lines)
        parts.append(
            f'<rect x="{left}" y="{y}" width="{BOX_WIDTH}" height="{height}" rx="6" '
            'fill="none" stroke="currentColor" stroke-width="1.5"/>'
        )
        for number, text in enumerate(box.lines):
            weight = ' font-weight="bold"' if number == 0 else ""
            parts.append(
                f'<text x="{middle}" y="{y + PAD + LINE * number + 15}" text-anchor="middle"'
                f"{weight}>{html.escape(text)}</text>"
            )
        y += height
        if index < len(boxes) - 1:
            parts.append(
                f'<line x1="{middle}" y1="{y}" x2="{middle}" y2="{y + GAP - 7}" '
                'stroke="currentColor" stroke-width="1.5"/>'
                f'<path d="M{middle - 5},{y + GAP - 8} L{middle},{y + GAP} '
                f'L{middle + 5},{y + GAP - 8} Z" fill="currentColor"/>'
            )
            y += GAP
    height = y + 1
    return (
        f'<svg class="diagram" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        'style="max-width: 100%; height: auto; font-family: inherit; font-size: 14px" '
        f'fill="currentColor" aria-label="{html.escape(title)}">'
        f"<title>{html.escape(title)}</title>{''.join(parts)}</svg>"
    )


def replace_diagrams(markdown: str) -> str:
    """The page with each mermaid block drawn as inline SVG (raises DiagramError)."""

    def svg(match: re.Match[str]) -> str:
        boxes = read_flowchart(match.group(1))
        title = " → ".join(box.lines[0] for box in boxes)
        return f'<div class="diagram">\n{draw(boxes, title)}\n</div>\n'

    return FENCE.sub(svg, markdown)


CODE = re.compile(r"<code[^>]*>(.*?)</code>", re.S)


def literal_pipes(page_html: str) -> list[str]:
    r"""The code spans of a rendered page that show a backslash before a pipe (``\|``)."""
    return [html.unescape(code) for code in CODE.findall(page_html) if "\\|" in code]


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    from mkdocs.exceptions import PluginError

    try:
        return replace_diagrams(markdown)
    except DiagramError as error:
        raise PluginError(f"{page.file.src_uri}: a diagram: {error}") from error


ROLE = re.compile(r":(?:class|func|data|attr|mod|meth|exc|obj):(<code>)~?")


def plain_roles(page_html: str) -> str:
    """The API reference's docstrings cross-refer in Sphinx's spelling (``:class:`~a.B```),
    which reaches the page as ``:class:<code>~a.B</code>``: the name alone, in code."""
    return ROLE.sub(r"\1", page_html)


def on_page_content(content: str, page: Any, **_: Any) -> str:
    from mkdocs.exceptions import PluginError

    content = plain_roles(content)
    found = literal_pipes(content)
    if found:
        raise PluginError(
            f"{page.file.src_uri}: code shows a literal \\| ({found[0]!r}); "
            "in a table write <code>a&#124;b</code>"
        )
    return content
