"""Padding given to a variant that never reads ``run.padding`` is said once, in both run modes."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from tests import forked
from tracer.errors import EXIT_OK
from tracer.inputs import load_inputs
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.tracing.stepper import Stepper
from tracer.tracing.trace import PaddingIgnored

PLUGIN = textwrap.dedent(
    """
    import torch
    from tracer import Variant, hookimpl, stage

    def ignores(run):
        scores = run.inputs @ run.inputs.T
        yield stage("scores", "Scores", axes=("query", "key"), scores=scores)
        return torch.softmax(scores, dim=-1) @ run.inputs

    def reads_late(run):
        scores = run.inputs @ run.inputs.T
        yield stage("scores", "Scores", axes=("query", "key"), scores=scores)
        hidden = torch.tensor(run.padding)  # read only after the first step
        return torch.softmax(scores.masked_fill(hidden, -torch.inf), dim=-1) @ run.inputs

    @hookimpl
    def register_variants(register):
        for run in (ignores, reads_late):
            name = "pad-" + run.__name__.replace("_", "-")
            register(Variant(name=name, title=name, run=run, stages=("scores",), uses_weights=False))
    """
)
PADDED = "tokens: [the, cat, pad]\nembeddings: [[1, 0], [0, 1], [0, 0]]\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("padding")
    (made / "padding_plugin.py").write_text(PLUGIN)
    (made / "padded.yaml").write_text(PADDED + "padding: [false, false, true]\n")
    (made / "none_padded.yaml").write_text(PADDED + "padding: [false, false, false]\n")
    return made


@pytest.fixture(scope="module")
def host(folder: Path) -> PluginHost:
    return PluginHost([folder], use_env=False)


def _run(host: PluginHost, variant: str, inputs: Path) -> tuple[list[str], str | None]:
    trace = start_trace(variant, TraceOptions(inputs=load_inputs(str(inputs))), host)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace.run_to_end()
    said = [str(w.message) for w in caught if issubclass(w.category, PaddingIgnored)]
    return said, trace.padding_note


@pytest.mark.parametrize("isolate", ["off", "plugins"], ids=["in-process", "worker"])
def test_padding_a_plugin_never_reads_is_said_once(
    host: PluginHost, folder: Path, isolate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_ISOLATE", isolate)
    said, note = _run(host, "pad-ignores", folder / "padded.yaml")
    assert len(said) == 1 and said[0] == note
    assert note is not None
    assert "token 2 ('pad')" in note and "variant 'pad-ignores' never read run.padding" in note


@pytest.mark.parametrize("isolate", ["off", "plugins"], ids=["in-process", "worker"])
def test_padding_read_after_the_first_step_is_not_mentioned(
    host: PluginHost, folder: Path, isolate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_ISOLATE", isolate)
    assert _run(host, "pad-reads-late", folder / "padded.yaml") == ([], None)


def test_padding_that_marks_no_token_is_not_mentioned(host: PluginHost, folder: Path) -> None:
    assert _run(host, "pad-ignores", folder / "none_padded.yaml") == ([], None)


@pytest.mark.parametrize(("variant", "ignored"), [("masked", False), ("vectorized", True)])
def test_built_ins_warn_only_when_they_ignore_padding(
    folder: Path, variant: str, ignored: bool
) -> None:
    said, _ = _run(PluginHost(use_env=False), variant, folder / "padded.yaml")
    assert len(said) == int(ignored)


def test_attn_trace_says_it_on_stderr_once_and_exits_ok(folder: Path) -> None:
    result = forked.run_attn(
        "trace", "pad-ignores", "--plugins-dir", str(folder),
        "--inputs", str(folder / "padded.yaml"), "--json",
    )  # fmt: skip
    assert result.returncode == EXIT_OK, result.stderr
    lines = [line for line in result.stderr.splitlines() if "run.padding" in line]
    assert lines == [
        "attn: warning: PaddingIgnored: the inputs mark token 2 ('pad') as padding, but variant "
        "'pad-ignores' never read run.padding, so the padding was not used in this run"
    ]
    assert result.stdout.startswith("{")


def test_a_stepper_keeps_the_note_for_a_front_end(host: PluginHost, folder: Path) -> None:
    options = TraceOptions(inputs=load_inputs(str(folder / "padded.yaml")))
    stepper = Stepper(lambda: start_trace("pad-ignores", options, host))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stepper.last()
    assert stepper.padding_note is not None and "token 2 ('pad')" in stepper.padding_note
