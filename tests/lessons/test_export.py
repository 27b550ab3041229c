"""attn lesson export: Markdown and nbformat-4 notebooks, computed live, never overwriting."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tests.data import seeds
from tracer.text.export import escape

Attn = Callable[..., tuple[int, str, str]]


def rendered_text(markdown: str) -> str:
    """What a CommonMark renderer shows for ``markdown``, as plain text (an independent oracle)."""
    page = MarkdownIt("commonmark").render(markdown)
    page = page.replace("<br />\n", "\n").replace("</p>\n<p>", "\n\n")
    return html.unescape(re.sub(r"</?p>", "", page)).strip("\n")


@pytest.mark.parametrize(
    "text",
    [
        "The <mask> token, a*b*c and **not bold**.",
        "1. not a list\n- nor this\n# nor a heading\n> nor a quote",
        "`code` [link](x) ~~strike~~ a_b_c | pipe \\ backslash",
        "two lines\nkept apart\n\nand a paragraph",
    ],
)
def test_markdown_shows_the_narration_as_written(text: str) -> None:
    assert rendered_text(escape(text)) == text


@given(
    st.text(
        alphabet=st.sampled_from(list("ab1 .-*_#<>[]()`~|\\+=!:")),
        min_size=1,
        max_size=40,
    ).filter(lambda t: t.strip() == t and "  " not in t)
)
def test_any_one_line_of_prose_survives_markdown(text: str) -> None:
    assert rendered_text(escape(text)) == text


def test_markdown_export(tmp_path: Path, attn: Attn) -> None:
    out = tmp_path / "lesson.md"
    status, printed, err = attn("lesson", "export", "1", "--to", "md", "-o", str(out))
    assert (status, err) == (0, "")
    assert printed == f"wrote {out}\n"
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Dot products as alignment\n")
    assert "{{" not in text  # every live value filled in
    dot = f"{seeds.SEED_003_DOT_0_1:.4f}"  # printed in the simple attention notebook
    assert f"= {dot}." in text  # the explanation of the first quiz, computed live
    assert "```python\n" in text and "torch.dot(" in text  # the code that ran
    assert "<details><summary>Answer</summary>" in text


def test_notebook_export(tmp_path: Path, attn: Attn) -> None:
    out = tmp_path / "lesson.ipynb"
    status, _, err = attn("lesson", "export", "05_causal_masking", "--to", "ipynb", "-o", str(out))
    assert (status, err) == (0, "")
    notebook = nbformat.read(str(out), as_version=4)
    nbformat.validate(notebook)
    assert notebook.nbformat == 4
    setup, *code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert "from tracer import trace" in setup.source and not setup.outputs
    # Each code cell recomputes a table with trace(...) and carries what it prints.
    assert code and all(cell.outputs and "trace(" in cell.source for cell in code)
    markdown = "".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    # The variant's own lines are text to read (a markdown cell), never a cell that would fail.
    assert "masked_fill" in markdown and not any("masked_fill" in cell.source for cell in code)
    assert "mask (6×6: query × key)" in markdown
    assert "not runnable on their own" in markdown
    assert "{{" not in markdown
    assert markdown.startswith("# Causal masking and dropout")


def test_export_never_overwrites_without_force(tmp_path: Path, attn: Attn) -> None:
    out = tmp_path / "notes.md"
    out.write_text("my notes", encoding="utf-8")
    assert attn("lesson", "export", "1", "--to", "md", "-o", str(out)) == (
        2,
        "",
        f"attn: {out} already exists; not overwriting it (use --force to replace it)\n",
    )
    assert out.read_text(encoding="utf-8") == "my notes"
    status, _, _ = attn("lesson", "export", "1", "--to", "md", "-o", str(out), "--force")
    assert status == 0
    assert out.read_text(encoding="utf-8").startswith("# Dot products")


def test_export_needs_a_format(attn: Attn) -> None:
    assert attn("lesson", "export", "1") == (
        2,
        "",
        "attn: 'attn lesson export' needs --to md or --to ipynb\n",
    )


def test_export_refuses_a_lesson_with_problems(tmp_path: Path, attn: Attn) -> None:
    lesson = tmp_path / "bad.yaml"
    lesson.write_text(
        "title: T\nsummary: S\nsteps:\n  - show: {variant: naive-loop, stage: scores, "
        "tensor: nope}\n",
        encoding="utf-8",
    )
    status, _, err = attn(
        "lesson", "export", str(lesson), "--to", "md", "-o", str(tmp_path / "x.md")
    )
    assert status == 1
    assert f"{lesson}:4:56: stage 'scores' of 'naive-loop' has no tensor 'nope'" in err
    assert not (tmp_path / "x.md").exists()
