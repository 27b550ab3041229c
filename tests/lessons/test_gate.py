"""One gate: a lesson ``attn lesson check`` refuses is refused by every front end, with the
same problems; exports name their inputs files relative to themselves, so they travel."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from tracer.lessons.loader import LessonError
from tracer.plugin_host import PluginHost
from tracer.session.lesson import open_lesson

Attn = Callable[..., tuple[int, str, str]]

TYPED = """\
title: Typed
summary: A number typed into prose goes stale.
steps:
  - narration: The weight is 0.8343 here.
  - show:
      variant: vectorized
      stage: weights
      caption: 0.8343 is typed into the caption and goes stale
"""


@pytest.fixture
def typed(tmp_path: Path) -> Path:
    path = tmp_path / "typed.yaml"
    path.write_text(TYPED, encoding="utf-8")
    return path


def test_every_front_end_refuses_what_check_refuses(
    typed: Path, tmp_path: Path, attn: Attn, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, _ = attn("lesson", "check", str(typed))
    assert status == 1
    problems = out.splitlines()
    assert [p.split(": ", 1)[0] for p in problems] == [f"{typed}:4:30", f"{typed}:8:16"]
    assert "0.8343 is typed into the caption and goes stale" in problems[1]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n\nq\n"))
    for argv in (
        ("lesson", "run", str(typed), "--plain"),
        ("lesson", "run", str(typed), "--plain", "-i"),
        ("lesson", "export", str(typed), "--to", "md", "-o", str(tmp_path / "t.md")),
        ("lesson", "export", str(typed), "--to", "ipynb", "-o", str(tmp_path / "t.ipynb")),
    ):
        status, printed, err = attn(*argv)
        assert (status, printed, err.splitlines()) == (1, "", problems), argv
    assert not (tmp_path / "t.md").exists() and not (tmp_path / "t.ipynb").exists()
    # The app opens lessons through the session, which refuses them with the same problems
    # (the lesson screen shows them instead of the lesson).
    with pytest.raises(LessonError) as refused:
        open_lesson(typed, host=PluginHost(), warm=False)
    assert str(refused.value).splitlines() == problems


def test_a_warning_does_not_refuse(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "warned.yaml"
    path.write_text(
        "title: W\nsummary: S\nsteps:\n  - narration: This is **bold**.\n", encoding="utf-8"
    )
    status, out, _ = attn("lesson", "check", str(path))
    assert status == 0 and "warning:" in out
    status, out, err = attn("lesson", "run", str(path), "--plain")
    assert (status, err) == (0, "") and "This is **bold**." in out


def test_an_exported_notebook_runs_where_it_is_moved(tmp_path: Path, attn: Attn) -> None:
    here = tmp_path / "made"
    here.mkdir()
    (here / "data.yaml").write_text(
        "tokens: [one, two, three]\nembeddings:\n  - [0.1, 0.9]\n  - [0.5, 0.2]\n  - [0.7, 0.4]\n",
        encoding="utf-8",
    )
    (here / "lesson.yaml").write_text(
        "title: Travels\nsummary: S\ninputs: data.yaml\nsteps:\n"
        "  - show:\n      variant: vectorized\n      stage: weights\n",
        encoding="utf-8",
    )
    status, _, err = attn(
        "lesson", "export", str(here / "lesson.yaml"), "--to", "ipynb", "-o", str(here / "l.ipynb")
    )
    assert (status, err) == (0, "")
    status, _, err = attn(
        "lesson", "export", str(here / "lesson.yaml"), "--to", "md", "-o", str(here / "l.md")
    )
    assert (status, err) == (0, "")
    for name in ("l.ipynb", "l.md"):
        text = (here / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in text and "inputs='data.yaml'" in text
    moved = tmp_path / "elsewhere"
    shutil.move(str(here), str(moved))
    notebook = nbformat.read(str(moved / "l.ipynb"), as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert len(code) >= 2
    namespace: dict[str, object] = {}
    old = Path.cwd()
    os.chdir(moved)  # a notebook's kernel runs in the notebook's folder
    try:
        for cell in code:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(cell.source, namespace)  # the cells the export just wrote
            expected = "".join(output.text for output in cell.outputs)
            assert printed.getvalue() == expected
    finally:
        os.chdir(old)


def test_trace_inputs_names_a_variants_own_input_set(attn: Attn) -> None:
    status, out, err = attn(
        "trace", "induction", "--inputs", "repeated-letters", "--stages", "tokens"
    )
    assert (status, err) == (0, "")
    assert "tokens: R J O S B I M L N G R J O S B I M L N G" in out
    status, out, err = attn("trace", "induction", "--inputs", "repeated-leters")
    assert (status, out) == (2, "")
    assert err == (
        "attn: unknown input set 'repeated-leters' (did you mean 'repeated-letters'?); "
        "built-in sets: four-words, ton-voyage, your-journey; the variants' own: "
        "letters-text, repeated-letters, or give a .yaml/.json file\n"
    )


SOURCE_WEIGHTS_ONLY = """\
tokens: [Le, chat, est]
embeddings: [[0.2, 0.9, 0.1], [0.7, 0.3, 0.5], [0.4, 0.6, 0.8]]
weights:
  query: [[0.5, -0.2], [0.1, 0.8], [-0.6, 0.3]]
source:
  tokens: [The, black, cat, sleeps]
  embeddings: [[0.1, 0.2, 0.3, 0.4], [0.8, 0.1, 0.6, 0.2], [0.3, 0.9, 0.2, 0.7], [0.5, 0.4, 0.9, 0.1]]
  weights:
    key: [[0.3, -0.5], [0.9, 0.2], [-0.1, 0.4], [0.6, 0.6]]
    value: [[0.2, 0.7], [-0.4, 0.1], [0.8, -0.3], [0.1, 0.5]]
"""


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_source_weights_need_no_unused_main_weights(tmp_path: Path, suffix: str) -> None:
    import json

    import numpy as np
    import yaml

    from tracer.testing import run_variant

    document = yaml.safe_load(SOURCE_WEIGHTS_ONLY)
    path = tmp_path / f"cross{suffix}"
    text = json.dumps(document) if suffix == ".json" else SOURCE_WEIGHTS_ONLY
    path.write_text(text, encoding="utf-8")
    trace = run_variant("cross-attention", inputs=str(path))
    x, s = np.array(document["embeddings"]), np.array(document["source"]["embeddings"])
    wq = np.array(document["weights"]["query"])
    wk, wv = (np.array(document["source"]["weights"][n]) for n in ("key", "value"))
    q, k, v = x @ wq, s @ wk, s @ wv
    scores = q @ k.T / np.sqrt(2)
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    assert trace.output is not None
    assert np.allclose(trace.output.double().numpy(), weights @ v, atol=1e-5)


def test_trace_json_says_the_init_that_drew_the_projections_the_file_left_out(
    tmp_path: Path, attn: Attn
) -> None:
    import json

    path = tmp_path / "cross.yaml"
    path.write_text(SOURCE_WEIGHTS_ONLY, encoding="utf-8")
    status, out, _ = attn("trace", "cross-attention", "--inputs", str(path), "--json")
    assert status == 0
    # key and value of the main sequence were drawn (by rand, the default), so the init
    # is stated: an outside oracle draws them again from it and the seed.
    assert json.loads(out)["init"] == "rand"


def test_main_weights_without_a_source_still_need_all_three(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "partial.yaml"
    path.write_text(SOURCE_WEIGHTS_ONLY.split("source:")[0], encoding="utf-8")
    assert attn("trace", "trainable", "--inputs", str(path)) == (
        2,
        "",
        f"{path}:4:3: weights is missing key, value\n",
    )
