"""Write the layers of tracer/layers.py into docs/architecture.md (between its markers).

    python scripts/architecture_doc.py          # rewrite the page
    python scripts/architecture_doc.py --check  # exit 1 if the page is out of date

tests/core/test_import_graph.py checks the same table against the code, so the page, the
test and the code cannot drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracer.layers import LAYERS, PLUGIN_API, SHIMS, UPWARD  # noqa: E402

PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- layers: made by scripts/architecture_doc.py from tracer/layers.py -->"
END = "<!-- /layers -->"


def _where(member: str) -> str:
    path = member.replace(".", "/")
    if member == "tracer":
        return "`tracer/__init__.py`"
    if (ROOT / path).is_dir():
        return f"`{path}/`"
    return f"`{path}.py`"


def section() -> str:
    ids = [f"L{number}" for number in range(len(LAYERS))]
    diagram = ["```mermaid", "flowchart TD"]
    for node, layer in zip(ids, LAYERS, strict=True):
        shown = " · ".join(m.removeprefix("tracer.") for m in layer.members)
        diagram.append(f'    {node}["{layer.name}<br/>{shown}"]')
    diagram.append("    " + " --> ".join(ids))
    diagram.append("```")
    rows = ["| layer | modules | what it does |", "|---|---|---|"]
    for layer in LAYERS:
        rows.append(f"| {layer.name} | {', '.join(map(_where, layer.members))} | {layer.job} |")
    shims = [
        f"- `{old}` is kept for code that imported it there: it is `{new}`."
        for old, new in SHIMS.items()
    ]
    upward = [f"- `{a}` -> `{b}`: {why}." for (a, b), why in UPWARD.items()]
    api = ", ".join(f"`{m}`" for m in PLUGIN_API)
    return "\n".join(
        [
            BEGIN,
            "",
            *diagram,
            "",
            *rows,
            "",
            f"A plugin, built-in or not, imports only {api} (and its own package).",
            "",
            "Old import paths kept working after a move:",
            "",
            *shims,
            "",
            "The only imports that point up, each run only when asked for:",
            "",
            *upward,
            "",
            END,
        ]
    )


def rewritten(page: str) -> str:
    start, end = page.index(BEGIN), page.index(END) + len(END)
    return page[:start] + section() + page[end:]


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    new = rewritten(page)
    if "--check" in argv:
        if new != page:
            print(
                f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/architecture_doc.py"
            )
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
