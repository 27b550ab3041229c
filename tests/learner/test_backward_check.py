"""``attn check --against backward`` and ``flash-backward``: a learner's backward pass is
compared stage by stage, and each common mistake is named by the variant's mutations, at the
learner's line. The learner files under backward/ are written by hand, beside this test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.learner.check import MATCH, check
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "backward"

# (file, variant, its options, the diagnosis code, the learner's line it names)
MISTAKES = [
    ("no_scale_dq.py", "backward", {}, "backward-scale", 18),
    ("dp_for_ds.py", "backward", {}, "softmax-skipped", 18),
    ("no_rowsum.py", "backward", {}, "rowsum-missing", 17),
    ("rowsum_axis.py", "backward", {}, "rowsum-axis", 17),
    ("transpose_dk.py", "backward", {}, "transpose-missing", 19),
    ("unmasked_backward.py", "backward", {"causal": True}, "mask-unused-backward", 15),
    ("flash_tile_softmax.py", "flash-backward", {"causal": True}, "no-logsumexp", 32),
]


def reference(host: PluginHost, variant: str, options: dict[str, object]) -> Trace:
    return start_trace(variant, TraceOptions(options=options), host).run_to_end()


@pytest.mark.parametrize(("name", "variant", "options", "code", "line"), MISTAKES)
def test_each_mistake_is_named_at_its_line(
    host: PluginHost, name: str, variant: str, options: dict[str, object], code: str, line: int
) -> None:
    result = check(FILES / name, reference(host, variant, options))
    assert not result.matches
    assert [(d.code, d.line) for d in result.diagnoses][:1] == [(code, line)]


@pytest.mark.parametrize(
    ("name", "variant", "options"),
    [
        ("correct.py", "backward", {"causal": True}),
        ("flash_correct.py", "flash-backward", {"causal": True, "tile": 4}),
    ],
)
def test_a_correct_backward_passes_stage_by_stage(
    host: PluginHost, name: str, variant: str, options: dict[str, object]
) -> None:
    result = check(FILES / name, reference(host, variant, options))
    assert result.matches and result.diagnoses == []
    matched = {r.stage.name for r in result.stages if r.status == MATCH}
    if variant == "backward":  # dV, dP, dS, dQ and dK each found among the learner's tensors
        assert {"grad_values", "grad_weights", "grad_scores", "grad_queries"} <= matched
        assert {"grad_keys", "grad_inputs"} <= matched
