"""Where a declared mistake leaves the output as it is, ``attn check`` still says that the
learner's stage differs: positions counted from 1 for queries and keys alike rotate both one
step further, and every score stays what it was. The learner files are in ``same_output/``."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from tracer.learner.check import DIFFERS, MATCH, check
from tracer.learner.report import format_check
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "same_output"


def rope(host: PluginHost) -> Trace:
    return start_trace("rope", TraceOptions(d_out=4), host).run_to_end()


def rotated(x: torch.Tensor, start: int) -> torch.Tensor:
    """RoPE with interleaved pairs, positions from ``start``, written from the formula alone."""
    n, d = x.shape
    out = x.clone()
    for m in range(n):
        for i in range(d // 2):
            angle = (m + start) * 10000.0 ** (-2 * i / d)
            a, b = float(x[m, 2 * i]), float(x[m, 2 * i + 1])
            out[m, 2 * i] = a * math.cos(angle) - b * math.sin(angle)
            out[m, 2 * i + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


def test_positions_from_one_leave_the_output_and_change_the_rotated_stage(
    host: PluginHost,
) -> None:
    trace = rope(host)
    weights = trace.context.weights
    assert weights is not None
    q, k = trace.context.inputs @ weights.query, trace.context.inputs @ weights.key
    # The premise, from the formula: the scores agree, the rotated queries do not.
    torch.testing.assert_close(
        rotated(q, 1) @ rotated(k, 1).T, rotated(q, 0) @ rotated(k, 0).T, atol=1e-5, rtol=0
    )
    assert not torch.allclose(rotated(q, 1), rotated(q, 0), atol=1e-3)

    result = check(FILES / "rope_both_from_one.py", trace)
    assert not result.matches
    assert result.output is not None and trace.output is not None
    torch.testing.assert_close(result.output, trace.output, atol=1e-5, rtol=0)
    assert result.diverging is not None and result.diverging.stage.name == "rotated"
    assert result.diverging.status == DIFFERS
    assert [(d.code, d.title, d.line) for d in result.diagnoses] == [
        ("rope-positions", "positions counted from 1", 18)
    ]
    report = format_check(result)
    assert ["DIFFERS", "rotated"] in [line.split() for line in report.splitlines()]
    assert "result: your output matches 'rope', but your 'rotated' stage does not" in report


def test_positions_from_zero_pass_with_every_stage_found(host: PluginHost) -> None:
    result = check(FILES / "rope_correct.py", rope(host))
    assert result.matches and result.diagnoses == []
    statuses = {r.stage.name: r.status for r in result.stages}
    assert statuses["rotated"] == MATCH
