"""The plugin host: built-ins through entry points, folders, isolation of broken plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tracer.errors import PluginError
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

BROKEN = FIXTURES / "broken_plugins"
GOOD = FIXTURES / "good_plugins"
BUILTINS = {"naive-loop", "vectorized", "trainable", "masked"}


def by_name(host: PluginHost) -> dict[str, object]:
    return {record.name: record for record in host.plugins}


@pytest.mark.lists_variants
def test_builtins_load_as_entry_points(host: PluginHost) -> None:
    records = {r.name: r for r in host.plugins if r.origin == "built-in"}
    assert set(records) >= BUILTINS
    for name in BUILTINS:
        assert records[name].source == f"tracer.builtin_plugins.{name.replace('-', '_')}"
        assert records[name].variants == [name]
        assert records[name].error is None


@pytest.mark.lists_variants
def test_broken_plugins_are_isolated_and_explained() -> None:
    host = PluginHost([BROKEN], use_env=False)
    records = {r.name: r for r in host.plugins}
    assert records["import_error"].error == (
        "ModuleNotFoundError: No module named 'attention_tracer_no_such_module' "
        f"({BROKEN / 'import_error.py'}:3)"
    )
    assert records["raising_hook"].error == (
        f"register_variants raised RuntimeError: registry exploded ({BROKEN / 'raising_hook.py'}:8)"
    )
    misspelled = records["misspelled_hook"].error
    assert misspelled is not None and misspelled.startswith("invalid hook: ")
    assert "register_variant" in misspelled and "unknown hook" in misspelled
    assert "never-seen" not in host.variants
    # A variant that registers fine and fails later is listed; every other variant still works.
    assert records["raising_variant"].error is None
    assert BUILTINS | {"raises-mid-run"} <= set(host.variants)
    assert start_trace("trainable", TraceOptions(), host).run_to_end().output is not None


def test_variant_raising_mid_run_is_a_one_line_plugin_error() -> None:
    host = PluginHost([BROKEN], use_env=False)
    trace = start_trace("raises-mid-run", TraceOptions(), host)
    first = next(trace)
    assert first.name == "inputs"  # type: ignore[union-attr]
    with pytest.raises(PluginError) as caught:
        next(trace)
    assert str(caught.value) == (
        f"{BROKEN / 'raising_variant.py'}:8: "
        "variant 'raises-mid-run' failed: ZeroDivisionError: oops in the middle"
    )
    assert trace.finished


def test_strict_mode_turns_failures_into_errors() -> None:
    with pytest.raises(PluginError, match=r"^plugin 'import_error' failed: ModuleNotFoundError"):
        PluginHost([BROKEN], strict=True, use_env=False)


def test_cli_strict_mode_exit_status(
    attn: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_STRICT_PLUGINS", "1")
    status, out, err = attn("trace", "trainable", "--plugins-dir", str(BROKEN))
    assert status == 3
    assert out == ""
    assert err.startswith("attn: plugin 'import_error' failed: ModuleNotFoundError")
    assert err.endswith("(ATTN_STRICT_PLUGINS=1)\n") and err.count("\n") == 1


def test_cli_warns_about_broken_plugins_and_keeps_working(
    attn: Callable[..., tuple[int, str, str]],
) -> None:
    status, out, err = attn("trace", "vectorized", "--plugins-dir", str(BROKEN), "--json")
    assert status == 0
    assert json.loads(out)["variant"] == "vectorized"
    warnings = err.splitlines()
    assert len(warnings) == 3
    assert all(w.startswith("attn: warning: plugin '") for w in warnings)


def test_cli_variant_failure_exit_status(attn: Callable[..., tuple[int, str, str]]) -> None:
    status, _, err = attn("trace", "raises-mid-run", "--plugins-dir", str(BROKEN))
    assert status == 3
    assert err.splitlines()[-1] == (
        f"{BROKEN / 'raising_variant.py'}:8: "
        "variant 'raises-mid-run' failed: ZeroDivisionError: oops in the middle"
    )


def test_plugins_json_lists_everything(attn: Callable[..., tuple[int, str, str]]) -> None:
    status, out, _ = attn(
        "plugins", "--json", "--plugins-dir", str(GOOD), "--plugins-dir", str(BROKEN)
    )
    assert status == 0
    listed = {p["name"]: p for p in json.loads(out)}
    assert listed["trainable"]["origin"] == "built-in"
    assert listed["trainable"]["variants"][0]["stages"][-1] == "context"
    assert listed["inplace"] == {
        "name": "inplace",
        "version": "1.2.3",
        "origin": "folder",
        "source": str(GOOD / "inplace.py"),
        "variants": [
            {
                "name": "inplace",
                "title": "In place",
                "stages": ["scores", "masked"],
                "loops": [],
                "options": [],
                "params": [],
                "uses_weights": True,
                "source": None,
                "default_source": None,
                "inputs": None,
                "unnormalised": [],
            },
            {
                "name": "untouched",
                "title": "No writes",
                "stages": ["scores"],
                "loops": [],
                "options": [],
                "params": [],
                "uses_weights": True,
                "source": None,
                "default_source": None,
                "inputs": None,
                "unnormalised": [],
            },
        ],
        "error": None,
        "warnings": [],
    }
    assert listed["import_error"]["error"].startswith("ModuleNotFoundError")


def test_plugins_dir_from_environment(
    attn: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_PLUGINS_DIR", str(GOOD))
    status, out, _ = attn("plugins")
    assert status == 0
    assert "inplace 1.2.3  [folder]" in out


def test_missing_plugins_dir_is_a_usage_error(attn: Callable[..., tuple[int, str, str]]) -> None:
    assert attn("plugins", "--plugins-dir", "/no/such/dir") == (
        2,
        "",
        "attn: plugins folder not found: /no/such/dir\n",
    )


def test_third_party_entry_point(tmp_path: Path) -> None:
    """A separately installed distribution's entry point is found, with its version."""
    site = tmp_path / "site"
    (site / "attn_extra").mkdir(parents=True)
    (site / "attn_extra" / "__init__.py").write_text(
        textwrap.dedent(
            """
            from tracer import Variant, hookimpl, stage

            def run(ctx):
                yield stage("inputs", "Inputs", inputs=ctx.inputs)
                return ctx.inputs

            @hookimpl
            def register_variants(register):
                register(Variant(name="identity", title="Identity", run=run, stages=("inputs",)))
            """
        )
    )
    dist = site / "attn_extra-0.4.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: attn-extra\nVersion: 0.4.0\n")
    (dist / "entry_points.txt").write_text("[attention_tracer]\nextra = attn_extra\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-m", "tracer", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    listed = {p["name"]: p for p in json.loads(result.stdout)}
    assert listed["extra"]["origin"] == "entry point"
    assert listed["extra"]["version"] == "0.4.0"
    assert listed["extra"]["variants"][0]["name"] == "identity"
