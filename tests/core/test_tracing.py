"""The tracer: lazy sub-steps, bounded memory, copy-on-write, and the source lines that ran."""

from __future__ import annotations

import gc
import itertools
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import FIXTURES
from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import Stage, SubStep

GOOD = FIXTURES / "good_plugins"


def tokens(count: int, d: int = 4) -> InputSet:
    generator = torch.Generator().manual_seed(0)
    rows = torch.rand(count, d, generator=generator).tolist()
    return InputSet(
        name=f"{count}-tokens",
        tokens=tuple(f"t{i}" for i in range(count)),
        embeddings=tuple(tuple(r) for r in rows),
    )


def test_stages_come_in_declared_order_with_indices(host: PluginHost) -> None:
    for name, variant in host.variants.items():
        if name not in ("naive-loop", "vectorized", "trainable", "masked"):
            continue
        trace = start_trace(name, TraceOptions(), host).run_to_end()
        assert tuple(s.name for s in trace.stages) == variant.stages
        assert [s.index for s in trace.stages] == list(range(len(variant.stages)))


def test_naive_loop_sub_steps_are_lazy(host: PluginHost) -> None:
    trace = start_trace("naive-loop", TraceOptions(inputs=tokens(120)), host)
    first = list(itertools.islice(trace, 1 + 10))
    assert isinstance(first[0], Stage) and first[0].name == "inputs"
    substeps = first[1:]
    assert all(isinstance(s, SubStep) for s in substeps)
    assert [s.position for s in substeps] == [(0, j) for j in range(10)]  # type: ignore[union-attr]
    assert [s.index for s in substeps] == list(range(10))
    assert len(trace.stages) == 1 and not trace.finished
    # The loop had produced exactly as many scores as were asked for, and no more.
    frame = trace._generator.gi_frame  # type: ignore[union-attr]
    assert (frame.f_locals["i"], frame.f_locals["j"]) == (0, 9)


def test_running_to_the_end_keeps_no_sub_steps(host: PluginHost) -> None:
    # Sub-steps an earlier test still holds (an app kept by a fixture) are not this trace's;
    # holding them here also stops a freed one's id being reused by a new one.
    gc.collect()
    earlier = [obj for obj in gc.get_objects() if type(obj) is SubStep]
    known = {id(obj) for obj in earlier}
    trace = start_trace("naive-loop", TraceOptions(inputs=tokens(40)), host)
    trace.run_to_end()
    gc.collect()
    alive = [obj for obj in gc.get_objects() if type(obj) is SubStep and id(obj) not in known]
    assert alive == []
    assert [s.name for s in trace.stages] == ["inputs", "scores", "weights", "context"]


def test_focus_makes_sub_steps_for_one_query_only(host: PluginHost) -> None:
    trace = start_trace("naive-loop", TraceOptions(query="journey"), host)
    positions = [s.position for s in trace if isinstance(s, SubStep) and s.stage == "scores"]
    assert positions == [(1, j) for j in range(6)]


def test_stage_tensors_are_not_copied(host: PluginHost, monkeypatch: pytest.MonkeyPatch) -> None:
    # In process: a plugin's variant in its worker process hands over copies by nature.
    monkeypatch.setenv("ATTN_ISOLATE", "off")
    plugins = PluginHost([GOOD], use_env=False)
    trace = start_trace("untouched", TraceOptions(), plugins).run_to_end()
    module = next(
        module
        for name, module in sys.modules.items()
        if name.startswith("attention_tracer_plugins") and name.endswith(".inplace")
    )
    recorded, yielded = trace.stage("scores").tensors["scores"], module.probe[-1]
    # The step's own tensor object (a reader keeps it while the variant writes to its own),
    # over the same values: nothing was copied.
    assert recorded.untyped_storage().data_ptr() == yielded.untyped_storage().data_ptr()


def test_in_place_write_after_recording_does_not_corrupt_the_stage() -> None:
    plugins = PluginHost([GOOD], use_env=False)
    trace = start_trace("inplace", TraceOptions(), plugins).run_to_end()
    scores = trace.stage("scores").tensors["scores"]
    masked = trace.stage("masked").tensors["scores"]
    x = trace.context.inputs
    torch.testing.assert_close(scores, x @ x.T)  # still the unmasked scores
    assert torch.isinf(masked[0, 1]) and masked[0, 0].item() != 42.0
    assert trace.output is not None and trace.output[0, 0].item() == 42.0


def line_of(path: str, fragment: str) -> int:
    """The first line of ``path`` containing ``fragment``."""
    lines = Path(path).read_text().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if fragment in text)


def test_source_lines_are_the_lines_that_ran(host: PluginHost) -> None:
    trace = start_trace("trainable", TraceOptions(), host).run_to_end()
    source = trace.source_file
    assert trace.stage("scores").lines == (line_of(source, "scores = queries @ keys.T"),)
    assert trace.stage("scaled").lines == (
        line_of(source, "d_k = keys.shape[-1]"),
        line_of(source, "scaled = scores / d_k**0.5"),
    )
    assert trace.stage("weights").lines == (line_of(source, "weights = torch.softmax(scaled"),)


def test_branch_not_taken_is_not_shown(host: PluginHost) -> None:
    trace = start_trace("masked", TraceOptions(), host).run_to_end()
    core = trace.stage("dropout").source_file
    assert core is not None and core.endswith("_causal_core.py")
    # The mask is drawn in the public dropout helper every built-in shares (tracer.dropout),
    # whose lines are recorded as the plugin's own helper's would be.
    import tracer.dropout

    helper = tracer.dropout.__file__
    dropout_line = line_of(helper, "draws = np.random.RandomState(seed")
    assert dropout_line not in trace.stage("dropout").files.get(helper, ())
    with_dropout = start_trace("masked", TraceOptions(dropout=0.5), host).run_to_end()
    assert dropout_line in with_dropout.stage("dropout").files[helper]


def test_lines_are_recorded_in_every_file_of_the_plugin(host: PluginHost) -> None:
    trace = start_trace("masked", TraceOptions(), host).run_to_end()
    own, core = trace.source_file, trace.stage("scores").source_file
    assert core is not None and core != own and Path(core).parent == Path(own).parent
    # The stage yielded from the shared core shows the core's lines...
    assert line_of(core, "scores = queries @ keys.transpose(-2, -1)") in trace.stage("scores").lines
    # ...and the variant's own stages stay in its own file.
    context = trace.stage("context")
    assert context.source_file == own
    assert line_of(own, "context = run.focus(weights @ values)") in context.lines


def test_loop_sub_step_lines(host: PluginHost) -> None:
    trace = start_trace("naive-loop", TraceOptions(), host)
    source = trace.source_file
    steps = [s for s in itertools.islice(trace, 3) if isinstance(s, SubStep)]
    dot = line_of(source, "score = torch.dot(inputs[i], inputs[j])")
    store = line_of(source, "scores[i, j] = score")
    assert dot in steps[1].lines and store in steps[1].lines
    assert line_of(source, "yield substep(") not in steps[1].lines


def test_a_stage_built_by_a_loop_shows_the_loop_body(host: PluginHost) -> None:
    trace = start_trace("naive-loop", TraceOptions(), host).run_to_end()
    source = trace.source_file
    lines = trace.stage("scores").lines
    assert line_of(source, "score = torch.dot(inputs[i], inputs[j])") in lines
    assert line_of(source, "scores[i, j] = score") in lines
    assert line_of(source, "sum_normalized = scores /") not in lines
    assert (
        line_of(source, "context[i] += softmax[i, j] * inputs[j]") in trace.stage("context").lines
    )


def test_tracing_leaves_global_state_alone(host: PluginHost) -> None:
    before_rng = torch.random.get_rng_state()
    before_trace = sys.gettrace()
    start_trace("masked", TraceOptions(dropout=0.3, init="linear"), host).run_to_end()
    assert torch.equal(torch.random.get_rng_state(), before_rng)
    assert sys.gettrace() is before_trace
