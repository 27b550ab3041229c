"""Hostile plugins and odd terminals: one line, a documented status, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Attn = Callable[..., tuple[int, str, str]]


def write_plugin(folder: Path, body: str) -> Path:
    folder.mkdir()
    (folder / "hostile.py").write_text(
        "import torch\nfrom tracer import Variant, hookimpl, stage\n\n"
        + textwrap.dedent(body)
        + textwrap.dedent(
            """
            @hookimpl
            def register_variants(register):
                register(Variant(name="hostile", title="H", run=run, stages=("a",),
                                 uses_weights=False))
            """
        )
    )
    return folder


def test_prints_while_running_stay_out_of_json(attn: Attn, tmp_path: Path) -> None:
    folder = write_plugin(
        tmp_path / "p",
        """
        def run(run):
            print("debugging", "x" * 1000)
            yield stage("a", "A", a=run.inputs)
            return run.inputs
        """,
    )
    status, out, err = attn("trace", "hostile", "--json", "--plugins-dir", str(folder))
    assert status == 0
    assert json.loads(out)["variant"] == "hostile"
    assert "debugging" in err


def test_an_enormous_view_is_refused_not_rendered(attn: Attn, tmp_path: Path) -> None:
    folder = write_plugin(
        tmp_path / "p",
        """
        def run(run):
            yield stage("a", "A", a=torch.zeros(1).expand(100_000, 100_000))
            return run.inputs
        """,
    )
    status, _, err = attn("trace", "hostile", "--plugins-dir", str(folder))
    assert status == 3
    assert err.strip().endswith(
        "variant 'hostile' stage 'a': tensor 'a' has 10,000,000,000 values (100000, 100000); "
        "a step can show at most 268,435,456"
    )


def test_grad_mode_switched_off_while_running_is_put_back(attn: Attn, tmp_path: Path) -> None:
    folder = write_plugin(
        tmp_path / "p",
        """
        def run(run):
            torch.set_grad_enabled(False)
            torch.set_default_dtype(torch.float64)
            yield stage("a", "A", a=run.inputs)
            return run.inputs
        """,
    )
    import torch

    assert attn("trace", "hostile", "--plugins-dir", str(folder))[0] == 0
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize("seed", ["99999999999999999999", "-99999999999999999999"])
def test_seeds_out_of_range(attn: Attn, seed: str) -> None:
    status, _, err = attn("trace", "trainable", "--seed", seed)
    assert status == 2
    assert err.strip() == (
        "attn: --seed must be a 64-bit integer, between -9223372036854775808 and "
        f"9223372036854775807, got {seed}"
    )


def test_an_output_encoding_without_greek_letters() -> None:
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    result = subprocess.run(
        [sys.executable, "-m", "tracer", "trace", "trainable", "--stages", "scaled"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("ascii")
    assert "w / sqrt d_k,  d_k = 2" in text
    assert "scaled (6x6: query x key)" in text
