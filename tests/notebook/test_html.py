"""Notebook display: heatmaps labelled from the axes a variant names, the code that ran, no script."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from tests.data.seeds import SIMPLE_SCORES
from tracer.errors import UsageError
from tracer.notebook import MAX_ROWS, trace

PLUGINS = [str(Path(__file__).parent / "plugins")]
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]


class Tables(HTMLParser):
    """Every <table> as rows of cell texts; every tag and style attribute seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.tags: set[str] = set()
        self.backgrounds: list[tuple[str, str]] = []
        self._cell: list[str] | None = None
        self._style = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell, self._style = [], dict(attrs).get("style") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell)
            self.tables[-1][-1].append(text)
            if tag == "td":
                found = re.search(r"background: (rgb\([^)]*\)|#\w+)", self._style)
                self.backgrounds.append((text, found.group(1) if found else ""))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> Tables:
    parser = Tables()
    parser.feed(html)
    return parser


def test_scores_match_the_course_and_carry_no_script_or_outside_reference() -> None:
    html = trace("vectorized")._repr_html_()
    tables = parse(html)
    scores = next(t for t in tables.tables if len(t) == 7 and len(t[1]) == 7)
    cells = [[float(text) for text in row[1:]] for row in scores[1:]]
    assert cells == SIMPLE_SCORES  # "Your journey starts with one step", from the course notes
    assert not tables.tags & {"script", "style", "link", "iframe", "img", "object"}
    assert "http" not in html and "javascript:" not in html.lower()


def test_token_axes_are_labelled_with_tokens_and_other_axes_with_indices() -> None:
    result = trace("named-axes", plugin_dirs=PLUGINS)
    html = result._repr_html_()
    tables = parse(html).tables
    scores = tables[0]
    assert scores[0] == ["query \\ key", *TOKENS]
    assert [row[0] for row in scores[1:]] == TOKENS
    # The per-head tensor: one table per head, each labelled with tokens on both token axes.
    per_head = [t for t in tables if t[0] == ["query \\ key", *TOKENS]]
    assert len(per_head) == 4  # scores, masked, head 0, head 1
    assert "head 0" in html and "head 1" in html
    # A tensor whose axes the variant did not name gets indices only, never tokens.
    plain = tables[-1]
    assert plain[0] == ["", "0", "1", "2"] and [row[0] for row in plain[1:]] == ["0", "1"]


def test_a_stage_on_its_own_knows_no_tokens_and_shows_indices() -> None:
    stage = trace("named-axes", plugin_dirs=PLUGINS).stages[0]
    tables = parse(stage._repr_html_()).tables
    assert tables[0][0] == ["query \\ key", "0", "1", "2", "3", "4", "5"]
    assert not set(TOKENS) & {cell for row in tables[0] for cell in row}


def test_heatmap_colour_follows_magnitude_and_masked_cells_are_grey() -> None:
    result = trace("named-axes", plugin_dirs=PLUGINS)
    x = result.context.inputs.numpy()
    oracle = x @ x.T
    parsed = parse(result.stages[1]._repr_html_())
    masked_cells = parsed.backgrounds[:36]
    for (text, background), expected in zip(
        masked_cells, np.triu(np.ones((6, 6)), 1).flat, strict=True
    ):
        assert (text == "-inf") == bool(expected)
        assert (background == "#d9d9d9") == bool(expected)
    largest = f"{oracle.max():.4f}"
    assert (largest, "rgb(33, 102, 172)") in masked_cells  # full strength at the maximum
    head_1 = parsed.backgrounds[72:108]  # the negated scores are red
    assert all(background.startswith("rgb(") for _, background in head_1)
    assert (f"{-oracle.max():.4f}", "rgb(178, 24, 43)") in head_1


def test_the_code_that_ran_is_shown_numbered_and_escaped() -> None:
    result = trace("named-axes", plugin_dirs=PLUGINS)
    html = result._repr_html_()
    source = (Path(PLUGINS[0]) / "named_axes.py").read_text().splitlines()
    number = next(i for i, line in enumerate(source, 1) if "& <" in line)
    assert number in result.stages[1].lines
    assert (
        f"{number:>5}  "
        + source[number - 1].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        in html
    )
    assert "Scores &lt;b&gt;raw&lt;/b&gt;" in html and "<b>raw" not in html


def test_tokens_from_an_inputs_file_are_escaped(tmp_path: Path) -> None:
    inputs = tmp_path / "hostile.yaml"
    inputs.write_text(
        'tokens: ["<script>alert(1)</script>", "a&b"]\nembeddings: [[1.0, 0.0], [0.0, 1.0]]\n'
    )
    html = trace("named-axes", plugin_dirs=PLUGINS, inputs=str(inputs))._repr_html_()
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "a&amp;b" in html


def test_large_tensors_say_what_they_leave_out(tmp_path: Path) -> None:
    count = MAX_ROWS + 36
    rows = "\n".join(f"  - [{i % 7 / 7:.3f}, {i % 5 / 5:.3f}]" for i in range(count))
    tokens = ", ".join(f"t{i}" for i in range(count))
    inputs = tmp_path / "long.yaml"
    inputs.write_text(f"tokens: [{tokens}]\nembeddings:\n{rows}\n")
    stage = trace("named-axes", plugin_dirs=PLUGINS, inputs=str(inputs)).stages[0]
    html = stage._repr_html_()
    assert len(parse(html).tables[0]) == 1 + MAX_ROWS
    assert "not shown: 36 more rows, 68 more columns" in html


def test_options_are_checked_and_errors_name_the_keyword() -> None:
    with pytest.raises(UsageError, match=r"trace\(\.\.\., window=\.\.\.\)"):
        trace("named-axes", plugin_dirs=PLUGINS, window=3)
    with pytest.raises(UsageError, match="heads"):
        trace("multihead", heads=0)
    assert trace("multihead", heads=3, d_out=6).context.options["heads"] == 3


def test_importing_tracer_and_its_trace_does_not_import_torch() -> None:
    code = (
        "import sys, tracer\n"
        "from tracer import trace\n"
        "assert callable(trace)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "False"


def test_the_guides_notebook_example_runs_as_written() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "learners.md").read_text()
    section = guide.split("## In Jupyter notebooks", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict[str, object] = {}
    exec(code, namespace)
    shown = namespace["t"]._repr_html_()  # type: ignore[attr-defined]
    assert "query 1 (journey)" in shown and "Causal" in shown
