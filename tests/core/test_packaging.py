"""Start-up cost and the installed wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_import_tracer_does_not_import_torch() -> None:
    code = "import sys, tracer, tracer.cli.main; print('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_building_the_cli_parser_does_not_import_torch() -> None:
    code = (
        "import sys; from tracer.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_every_folder_of_the_package_is_listed() -> None:
    """pyproject lists each folder of the package, data folders too: setuptools installs
    those as namespace packages and warns "Package would be ignored" about any unlisted."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join((package, *path.parent.relative_to(REPO / folder).parts))
        for package, folder in setuptools["package-dir"].items()
        for path in (REPO / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert folders - set(setuptools["packages"]) == set()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources, and a
    # stale build/ in the checkout could slip removed modules into the wheel.
    source = tmp_path_factory.mktemp("source") / "repo"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (found,) = out.glob("attention_tracer-*.whl")
    return found


@pytest.mark.slow
def test_wheel_adds_no_generic_top_level_names(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {n for n in top if not n.endswith(".dist-info")} == {"tracer"}
    assert "tracer/builtin_plugins/trainable.py" in names
    assert "tracer/builtin_plugins/_dropout.py" in names
    assert "tracer/builtin_lessons/01_dot_products.yaml" in names
    assert "tracer/lessons/schema.json" in names
    assert "tracer/py.typed" in names
    # The templates `attn exercises init` and `attn new-plugin` copy.
    templates = REPO / "tracer" / "learner" / "exercises" / "templates"
    expected = {f"tracer/{p.relative_to(REPO / 'tracer')}" for p in templates.rglob("*.tmpl")}
    assert len(expected) > 14 and expected <= set(names)
    # The induction variant's trained weights and the checksum it checks them against.
    assert "tracer/builtin_plugins/induction_weights.pt" in names
    assert "tracer/builtin_plugins/induction_weights.sha256" in names


@pytest.mark.slow
def test_installed_wheel_behaves_like_the_editable_install(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # Dependencies (torch, pluggy, ...) come from the test environment; the package from the wheel.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHON"))}

    def attn(*argv: str) -> str:
        result = subprocess.run(
            [str(venv / "bin" / "attn"), *argv],
            cwd=outside,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    where = subprocess.run(
        [str(python), "-c", "import tracer, tracer.builtin_plugins; print(tracer.__file__)"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(site)

    # Built-ins only: a plugin a contributor installed in the test venv is not in the wheel's.
    plugins = [p for p in json.loads(attn("plugins", "--json")) if p["origin"] == "built-in"]
    for plugin in plugins:
        plugin.pop("source", None)
    editable = [
        p
        for p in json.loads(
            subprocess.run(
                [sys.executable, "-m", "tracer", "plugins", "--json"],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
        )
        if p["origin"] == "built-in"
    ]
    for plugin in editable:
        plugin.pop("source", None)
    assert plugins == editable

    def editable(*argv: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "tracer", *argv],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=outside,
        ).stdout

    assert attn("lessons") == editable("lessons")
    assert "1." in attn("lessons")
    assert attn("lesson", "run", "01_dot_products", "--plain") == editable(
        "lesson", "run", "01_dot_products", "--plain"
    )

    # The variants that draw dropout from the shared public helper (tracer/dropout.py) show
    # its lines as their own helper's, in the installed layout as in the checkout.
    for variant in ("masked", "sliding-window", "grouped-query"):
        installed = json.loads(attn("trace", variant, "--json", "--dropout", "0.2"))
        reference = json.loads(
            subprocess.run(
                [sys.executable, "-m", "tracer", "trace", variant, "--json", "--dropout", "0.2"],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
        )
        for document in (installed, reference):
            for stage in document["stages"]:
                source = stage["source"]
                # The wheel's copy, or the checkout's.
                source["file"] = Path(source.pop("file")).name
                source["files"] = {
                    Path(path).name: lines for path, lines in source["files"].items()
                }
        assert installed == reference
        dropout = next(s for s in installed["stages"] if s["name"] == "dropout")
        assert "dropout.py" in dropout["source"]["files"]

    # The trained model loads from the wheel, its checksum holds, and it predicts the same.
    predicted = [
        json.loads(run("trace", "induction", "--json", "--stages", "prediction"))["stages"]
        for run in (attn, editable)
    ]
    assert predicted[0][0]["tensors"] == predicted[1][0]["tensors"]
