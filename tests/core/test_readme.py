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
    (code,) = re.findall(r"Save this as\s+`my_plugins/dot.py`.*?```python\n(.*?)```", text, re.S)
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "dot.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    x = torch.tensor(YOUR_JOURNEY.embeddings)

    for temperature in (1.0, 2.0):
        status, out, err = attn(
            "trace",
            "unscaled",
            "--plugins-dir",
            "my_plugins",
            "--json",
            "-o",
            f"temperature={temperature}",
        )
        assert (status, err) == (0, "")
        document = json.loads(out)
        assert [s["name"] for s in document["stages"]] == ["scores", "weights"]
        assert document["stages"][0]["axes"] == {"scores": ["query", "key"]}
        expected = F.scaled_dot_product_attention(x, x, x, scale=1.0 / temperature)
        torch.testing.assert_close(torch.tensor(document["output"]), expected)


# The README's example as it was before variants declared options and axes: plugins
# written against that API must keep working unchanged.
OLD_EXAMPLE = """\
import torch
from tracer import Variant, hookimpl, stage

def unscaled(run):
    scores = run.focus(run.inputs) @ run.inputs.T
    yield stage("scores", "Dot products", scores=scores)
    weights = torch.softmax(scores, dim=-1)
    yield stage("weights", "Softmax", weights=weights)
    return weights @ run.inputs

@hookimpl
def register_variants(register):
    register(Variant(name="unscaled", title="Unscaled", run=unscaled, stages=("scores", "weights")))
"""


def test_the_earlier_plugin_api_still_works(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "dot.py").write_text(OLD_EXAMPLE)
    status, out, err = attn("trace", "unscaled", "--plugins-dir", str(folder), "--json")
    assert (status, err) == (0, "")
    x = torch.tensor(YOUR_JOURNEY.embeddings)
    expected = F.scaled_dot_product_attention(x, x, x, scale=1.0)
    torch.testing.assert_close(torch.tensor(json.loads(out)["output"]), expected)
    assert attn("trace", "unscaled", "--plugins-dir", str(folder), "--heads", "2")[0] == 0


def test_quick_start_test_command_is_what_ci_runs() -> None:
    quick_start = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", quick_start, re.S)
    assert len(commands) == 2
    ci = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci
