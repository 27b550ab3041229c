"""``attn new-plugin``: the scaffolded package is complete, installs, and passes its own test."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

Attn = Callable[..., tuple[int, str, str]]


def test_scaffold_writes_a_package(attn: Attn, tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    status, out, err = attn("new-plugin", "strided-window", str(folder))
    assert status == 0, err
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "README.md",
        "attn_strided_window.py",
        "pyproject.toml",
        "tests/test_attn_strided_window.py",
    ]
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    assert project["project"]["name"] == "attn-strided-window"
    assert project["project"]["entry-points"]["attention_tracer"] == {
        "strided-window": "attn_strided_window"
    }
    assert project["tool"]["setuptools"]["py-modules"] == ["attn_strided_window"]
    assert "attn trace strided-window" in (folder / "README.md").read_text()
    assert f"  wrote  {folder / 'pyproject.toml'}\n" in out


@pytest.mark.lists_variants
def test_generated_variant_loads_and_agrees_with_torch(attn: Attn, tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    attn("new-plugin", "sparkle", str(folder))
    host = PluginHost([folder], entry_points=False, use_env=False)
    assert host.failures == []
    trace = start_trace("sparkle", TraceOptions(init="randn", d_out=3), host).run_to_end()
    x, W = trace.context.inputs, trace.context.weights
    assert W is not None
    expected = F.scaled_dot_product_attention(x @ W.query, x @ W.key, x @ W.value)
    assert trace.output is not None
    torch.testing.assert_close(trace.output, expected, atol=1e-5, rtol=0)
    assert [s.name for s in trace.stages] == [
        "inputs",
        "projections",
        "scores",
        "weights",
        "context",
    ]


@pytest.mark.lists_variants
def test_never_overwrites(attn: Attn, tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "README.md").write_text("mine\n")
    status, out, err = attn("new-plugin", "sparkle", str(folder))
    assert status == 2 and out == ""
    assert err == (
        f"attn: {folder / 'README.md'} already exists; attn new-plugin never overwrites files "
        "(choose another DIR)\n"
    )
    assert (folder / "README.md").read_text() == "mine\n"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"]  # nothing half-written


@pytest.mark.lists_variants
def test_default_folder_is_named_after_the_plugin(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status, _, _ = attn("new-plugin", "sparkle")
    assert status == 0
    assert (tmp_path / "attn-sparkle" / "attn_sparkle.py").is_file()


@pytest.mark.lists_variants
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Sparkle", "plugin name 'Sparkle' must be lower-case letters, digits and hyphens"),
        ("2fast", "plugin name '2fast' must be lower-case letters"),
        ("masked", "a variant named 'masked' already exists (see 'attn plugins')"),
    ],
)
def test_bad_names(attn: Attn, tmp_path: Path, name: str, message: str) -> None:
    status, _, err = attn("new-plugin", name, str(tmp_path / "pkg"))
    assert status == 2
    assert err.startswith(f"attn: {message}") and len(err.splitlines()) == 1
    assert not (tmp_path / "pkg").exists()


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_generated_package_installs_and_passes_its_own_test(attn: Attn, tmp_path: Path) -> None:
    package = tmp_path / "attn-sparkle"
    assert attn("new-plugin", "sparkle", str(package))[0] == 0
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHONPATH"))}
    # Offline: no index, no build isolation (setuptools comes from this environment).
    install = run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(package)],
        tmp_path, env,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    assert (site / "attn_sparkle.py").is_file()
    own_test = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        str(package / "tests"),
    ]
    # Run from tmp_path, so the module can only come from the installed copy.
    installed = run(own_test, tmp_path, {**env, "PYTHONPATH": str(site)})
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "4 passed" in installed.stdout
    # And the test is real: without the installed package it fails.
    missing = run(own_test, tmp_path, env)
    assert missing.returncode == 1, missing.stdout
    assert "'sparkle' is not among" in missing.stdout


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_variant_lists_hold_with_a_scaffolded_plugin_installed(attn: Attn, tmp_path: Path) -> None:
    """Install a plugin from ``attn new-plugin`` as its "Next:" lines say, in a throwaway venv
    beside the project, and run the suite's variant-listing tests there: they must still pass."""
    package = tmp_path / "attn-listing-probe"
    assert attn("new-plugin", "listing-probe", str(package))[0] == 0
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            tmp_path, dict(os.environ)).stdout.strip()
    )  # fmt: skip
    # The project and its dependencies come from this environment ("00-": read before the
    # editable install's own .pth files, copied next to it, which need it on the path).
    ours = Path(sysconfig.get_paths()["purelib"])
    (site / "00-project.pth").write_text(f"{ours}\n")
    for editable in ours.glob("__editable__*.pth"):
        (site / editable.name).write_text(editable.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}
    install = run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", "--no-build-isolation", str(package)],
        tmp_path, env,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    listed = run([str(python), "-m", "tracer", "plugins", "--json"], tmp_path, env)
    assert "listing-probe" in {p["name"] for p in json.loads(listed.stdout)}, listed.stderr
    tests = run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "-m", "lists_variants", str(ROOT / "tests")],
        ROOT, env,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and " deselected" in tests.stdout


def test_next_steps_run_in_a_fresh_shell(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh shell has no virtual environment on PATH: every tool the "Next:" lines name must
    # be this environment's own, found from the new folder (where the first line goes).
    monkeypatch.chdir(tmp_path)
    status, out, _ = attn("new-plugin", "sparkle")
    assert status == 0
    steps = [line.strip() for line in out.split("\nNext:\n", 1)[1].splitlines() if line.strip()]
    assert steps[0] == "cd attn-sparkle"
    folder = tmp_path / "attn-sparkle"
    tools = Path(os.path.abspath(sys.executable)).parent  # a venv's python is a link: no resolve
    named = [Path(os.path.normpath(folder / shlex.split(step)[0])) for step in steps[1:]]
    assert named == [tools / tool for tool in ("pip", "attn", "pytest")]
    assert all(path.is_file() for path in named)
    assert shlex.split(steps[2])[1:] == ["trace", "sparkle"]
    readme = (folder / "README.md").read_text()
    assert "pypi.org" not in readme  # attention-tracer has no PyPI page to link to
    # The files travel with the package: no path of this machine (its environment, its home).
    for written in folder.rglob("*"):
        if written.is_file():
            text = written.read_text()
            assert sys.prefix not in text and str(tmp_path) not in text, written
    assert "environment active" in readme and "source " not in readme


def test_next_steps_name_a_nearby_environment_relatively() -> None:
    from tracer.learner.scaffold import environment_bin

    beside = Path(sys.prefix).parent / "attn-sparkle"  # a plugin written next to the .venv
    venv = Path(sys.prefix).name
    assert environment_bin(beside) == os.path.join("..", venv, "bin")
