"""A loop over too many tokens' pairs is refused as it passes the sub-step limit, not run for hours."""

from __future__ import annotations

import pytest

import tracer.tracing.trace as trace_module
from tracer.errors import UsageError
from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.runner import TraceOptions, start_trace


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


@pytest.mark.parametrize("isolate", ["off", "all"])
def test_a_loop_past_the_limit_is_refused_with_what_to_do(
    small_limit: int, isolate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_ISOLATE", isolate)  # in the tool's process, and in a worker
    trace = start_trace("naive-loop", TraceOptions(inputs=_tokens(5)), PluginHost())
    with pytest.raises(UsageError) as raised:
        trace.run_to_end()
    assert str(raised.value) == (
        "variant 'naive-loop' has made 20 sub-steps in its loop for stage 'scores' with 5 "
        "tokens, the most one loop may make; give fewer tokens, or follow one query "
        "(--query, a lesson's query:)"
    )
    assert raised.value.exit_status == 2


def test_a_loop_at_the_limit_runs_and_one_query_fits(small_limit: int) -> None:
    host = PluginHost(use_env=False)
    # 4 tokens: 16 pairs a loop, under 20.
    done = start_trace("naive-loop", TraceOptions(inputs=_tokens(4)), host).run_to_end()
    assert [s.name for s in done.stages] == ["inputs", "scores", "weights", "context"]
    # 6 tokens are 36 pairs, but following one query makes 6 sub-steps a loop.
    focused = start_trace("naive-loop", TraceOptions(inputs=_tokens(6), query="t2"), host)
    assert focused.run_to_end().finished
