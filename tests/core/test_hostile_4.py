"""Reliability 4: the tool's own process, closed and full streams, limits, files and formats."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from tracer.plugin_host import PluginHost
from tracer.runner import TraceOptions, start_trace

# Wrong numbers: in-place updates after a step was recorded, in the tool's own process --------

IN_PLACE = textwrap.dedent(
    """
    import torch
    from tracer import Variant, hookimpl, stage

    def data_sub(W):
        W.data.sub_(1.0)

    def add_no_grad(W):
        with torch.no_grad():
            W.add_(1.0)

    def detached(W):
        W.detach().mul_(3.0)

    def numpy_view(W):
        W.detach().numpy()[...] += 5.0

    def set_item(W):
        with torch.no_grad():
            W[0] = -7.0

    def make(update):
        def run(ctx):
            W = torch.ones(2, 3, requires_grad=True)
            yield stage("before", "W before", w=W)
            update(W)
            yield stage("after", "W after", w=W)
            return W.detach()
        return run

    @hookimpl
    def register_variants(register):
        for update in (data_sub, add_no_grad, detached, numpy_view, set_item):
            name = "w-" + update.__name__.replace("_", "-")
            register(Variant(name=name, title=name, run=make(update), stages=("before", "after")))
    """
)
UPDATES = ("data-sub", "add-no-grad", "detached", "numpy-view", "set-item")


@pytest.fixture(scope="module")
def in_place_host(tmp_path_factory: pytest.TempPathFactory) -> PluginHost:
    folder = tmp_path_factory.mktemp("in_place")
    (folder / "in_place_updates.py").write_text(IN_PLACE)
    return PluginHost([folder], use_env=False)


@pytest.mark.parametrize("update", UPDATES)
def test_in_place_update_after_a_stage_keeps_the_value_a_reader_already_took(
    in_place_host: PluginHost, update: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ATTN_ISOLATE=off is how every plugin runs off Linux: the guard alone keeps the numbers.
    monkeypatch.setenv("ATTN_ISOLATE", "off")
    trace = start_trace(f"w-{update}", TraceOptions(), in_place_host)
    before = next(trace).tensors["w"]  # taken before the update, as `attn trace --json` does
    after = next(trace).tensors["w"]
    list(trace)
    torch.testing.assert_close(before, torch.ones(2, 3))
    assert not torch.equal(after, torch.ones(2, 3))
    torch.testing.assert_close(after, trace.output)
