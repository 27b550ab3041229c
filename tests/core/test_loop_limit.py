"""A loop over too many tokens' pairs is refused: before it starts when its variant declares
its cost (every built-in does), else as it passes the sub-step limit, never run for hours."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import tracer.tracing.trace as trace_module
from tracer.errors import UsageError
from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

# naive-loop's two loops, written as a third-party author who declares no cost would.
UNDECLARED = textwrap.dedent(
    """
    import torch
    from tracer import Variant, hookimpl, stage, substep

    def pairs(run):
        x = run.inputs
        n = x.shape[0]
        scores = torch.zeros(n, n)
        for i in run.query_indices:
            for j in range(n):
                scores[i, j] = x[i] @ x[j]
                yield substep("scores", (i, j), axes={"score": ()}, score=scores[i, j].clone())
        yield stage("scores", "Scores", axes=("query", "key"), scores=run.focus(scores))
        return run.focus(scores)

    @hookimpl
    def register_variants(register):
        register(Variant(name="pairs", title="Pairs", run=pairs, stages=("scores",),
                         loops=("scores",), uses_weights=False))
    """
)


def _tokens(count: int) -> InputSet:
    return InputSet(
        name="long",
        tokens=tuple(f"t{i}" for i in range(count)),
        embeddings=tuple((float(i % 3), 1.0) for i in range(count)),
    )


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    # 16,384 sub-steps take seconds; the same rule with 20 takes none.
    monkeypatch.setattr(trace_module, "MAX_SUBSTEPS_PER_LOOP", 20)
    return 20


@pytest.fixture
def undeclared(tmp_path: Path) -> PluginHost:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "pairs.py").write_text(UNDECLARED)
    return PluginHost([folder], use_env=False)


@pytest.mark.parametrize("isolate", ["off", "all"])
def test_a_loop_past_the_limit_is_refused_with_what_to_do(
    small_limit: int, isolate: str, monkeypatch: pytest.MonkeyPatch, undeclared: PluginHost
) -> None:
    monkeypatch.setenv("ATTN_ISOLATE", isolate)  # in the tool's process, and in a worker
    trace = start_trace("pairs", TraceOptions(inputs=_tokens(5)), undeclared)
    with pytest.raises(UsageError) as raised:
        trace.run_to_end()
    assert str(raised.value) == (
        "variant 'pairs' has made 20 sub-steps in its loop for stage 'scores' with 5 "
        "tokens, the most one loop may make; give fewer tokens, or follow one query "
        "(--query, a lesson's query:)"
    )
    assert raised.value.exit_status == 2


def test_a_declared_loop_past_the_limit_is_refused_before_it_starts(small_limit: int) -> None:
    host = PluginHost(use_env=False)
    with pytest.raises(UsageError) as raised:
        start_trace("naive-loop", TraceOptions(inputs=_tokens(5)), host)  # no step taken
    assert str(raised.value) == (
        "variant 'naive-loop' over 5 tokens would make 25 sub-steps in one loop; the limit "
        "is 20: give fewer tokens or follow one query (--query, a lesson's query:)"
    )
    assert raised.value.exit_status == 2


def test_a_loop_at_the_limit_runs_and_one_query_fits(
    small_limit: int, undeclared: PluginHost
) -> None:
    host = PluginHost(use_env=False)
    # 4 tokens: 16 pairs a loop, under 20.
    done = start_trace("naive-loop", TraceOptions(inputs=_tokens(4)), host).run_to_end()
    assert [s.name for s in done.stages] == ["inputs", "scores", "weights", "context"]
    # 6 tokens are 36 pairs, but following one query makes 6 sub-steps a loop.
    focused = start_trace("naive-loop", TraceOptions(inputs=_tokens(6), query="t2"), host)
    assert focused.run_to_end().finished
    # A variant without a declared cost runs as before, under the limit.
    assert start_trace("pairs", TraceOptions(inputs=_tokens(4)), undeclared).run_to_end().finished
