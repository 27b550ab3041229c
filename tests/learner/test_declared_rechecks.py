"""A plugin's variant declares where ``attn check`` re-checks a passing file
(``Variant(rechecks=...)``), as the built-ins choose theirs: a softcap that is right only at the
default ``cap=1`` is caught at the declared ``cap=0.5``. The plugin and the learner files are in
``declared/``, written for these tests."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from tracer import Option, Variant
from tracer.learner.check import judge
from tracer.learner.report import format_judgement
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "declared"


@pytest.fixture(scope="module")
def softcap_host() -> PluginHost:
    host = PluginHost([FILES / "plugin"], entry_points=False, use_env=False)
    assert host.failures == []
    return host


def judged(host: PluginHost, name: str, **options: Any) -> Any:
    base = TraceOptions(options=options)

    def rerun(changes: dict[str, Any]) -> Trace:
        return start_trace("softcap", replace(base, **changes), host).run_to_end()

    return judge(FILES / name, rerun({}), rerun)


def test_the_reference_softcaps_as_torch_computes_it(softcap_host: PluginHost) -> None:
    trace = start_trace("softcap", TraceOptions(options={"cap": 0.5}), softcap_host).run_to_end()
    x, w = trace.context.inputs, trace.context.weights
    assert w is not None and trace.output is not None
    scores = (x @ w.query) @ (x @ w.key).T / w.key.shape[-1] ** 0.5
    expected = torch.softmax(0.5 * torch.tanh(scores / 0.5), dim=-1) @ (x @ w.value)
    torch.testing.assert_close(trace.output, expected, atol=1e-6, rtol=0)


def test_a_softcap_right_only_at_the_default_is_caught_by_the_declared_recheck(
    softcap_host: PluginHost,
) -> None:
    judgement = judged(softcap_host, "softcap_not_divided.py")
    assert judgement.first.matches  # cap=1: tanh(s) and 1·tanh(s/1) agree
    assert not judgement.matches
    failed = judgement.failed
    assert failed is not None and failed.recheck.key == "declared_1"
    assert failed.changes == {"options": {"cap": 0.5}}
    report = format_judgement(judgement)
    assert "'softcap' asks for a check with -o cap=0.5 too" in report
    assert failed.result.diverging is not None
    assert failed.result.diverging.stage.name == "capped"


def test_a_right_softcap_passes_the_declared_recheck(softcap_host: PluginHost) -> None:
    judgement = judged(softcap_host, "softcap_correct.py")
    assert judgement.matches
    assert [r.recheck.key for r in judgement.rechecks] == ["declared_1"]


def test_a_run_already_at_the_declared_values_is_not_checked_again(
    softcap_host: PluginHost,
) -> None:
    judgement = judged(softcap_host, "softcap_not_divided.py", cap=0.5)
    assert not judgement.first.matches and judgement.rechecks == []


def _variant(**fields: Any) -> Variant:
    return Variant(
        name="capped",
        title="t",
        run=lambda run: iter(()),
        stages=("context",),
        options=(Option("cap", float, 1.0),),
        **fields,
    )


@pytest.mark.parametrize(
    ("rechecks", "problem"),
    [
        (({"cpa": 0.5},), "'cpa' is not one of its options (did you mean 'cap'?)"),
        (({"cap": "half"},), "'half' is not float"),
        ([{"cap": 0.5}], "must be a tuple of dicts"),
        (("cap=0.5",), "must be a dict of option values"),
    ],
)
def test_a_recheck_that_cannot_work_is_refused_where_it_is_declared(
    rechecks: Any, problem: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        _variant(rechecks=rechecks)


def test_trace_options_may_be_rechecked_too() -> None:
    variant = _variant(rechecks=({"seed": 3, "d_out": 4}, {"cap": 0.25}))
    assert len(variant.rechecks) == 2
