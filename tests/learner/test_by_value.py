"""Diagnosis by value for a mistake no variant declares: rotary queries and keys turned the
other way (by −mθ) are named from the numbers alone, at the line that turned them. The learner
file is in ``by_value/``."""

from __future__ import annotations

from pathlib import Path

import torch

from tracer.learner.check import check
from tracer.learner.relations import Known, explain
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "by_value"


def test_rotary_turned_the_other_way_is_named(host: PluginHost) -> None:
    trace = start_trace("rope", TraceOptions(d_out=4), host).run_to_end()
    result = check(FILES / "rope_turned_back.py", trace)
    assert not result.matches
    assert result.diverging is not None and result.diverging.stage.name == "rotated"
    assert [(d.code, d.line) for d in result.diagnoses] == [("opposite-rotation", 11)]
    assert "by −mθ instead of mθ" in result.diagnoses[0].message


def _known(x: torch.Tensor, angle: torch.Tensor) -> Known:
    """The reference's tensors for interleaved rotary embeddings, computed from the formula."""
    cos, sin = angle.cos(), angle.sin()
    a, b = x[:, 0::2], x[:, 1::2]
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    tensors = {"queries": x, "cos": cos, "sin": sin, "rotated_queries": turned}
    return Known("rotated", turned, tensors, None, 1, x.shape[-1], x.shape[0])


def test_only_the_opposite_angle_is_called_opposite() -> None:
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    angle = torch.arange(5.0)[:, None] * torch.tensor([1.0, 0.01])
    known = _known(x, angle)
    back = _known(x, -angle).expected  # by −mθ, from the same formula
    found = explain(back, known, 3)
    assert found is not None and found.code == "opposite-rotation"
    # Twice the angle, or the right angle on other features, is not "the opposite way".
    twice = _known(x, 2 * angle).expected
    found = explain(twice, known, 3)
    assert found is None or found.code != "opposite-rotation"
    other = _known(x.flip(0), angle).expected
    found = explain(other, known, 3)
    assert found is None or found.code != "opposite-rotation"
