"""The README's examples work as written."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tracer.inputs.builtin import YOUR_JOURNEY

README = Path(__file__).resolve().parents[2] / "README.md"


def test_plugin_example_runs_as_documented(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text()
    (code,) = re.findall(r"Save this as\n`my_plugins/dot.py`.*?```python\n(.*?)```", text, re.S)
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "dot.py").write_text(code)
    monkeypatch.chdir(tmp_path)

    status, out, err = attn("trace", "unscaled", "--plugins-dir", "my_plugins", "--json")
    assert (status, err) == (0, "")
    document = json.loads(out)
    assert [s["name"] for s in document["stages"]] == ["scores", "weights"]
    x = torch.tensor(YOUR_JOURNEY.embeddings)
    expected = F.scaled_dot_product_attention(x, x, x, scale=1.0)
    torch.testing.assert_close(torch.tensor(document["output"]), expected)


def test_quick_start_test_command_is_what_ci_runs() -> None:
    quick_start = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", quick_start, re.S)
    assert len(commands) == 2
    ci = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci
