"""The line a diagnosis cites: the call whose argument made the difference when the mistake
enters through a helper (the helper's line beside it), and the line inside a custom
``autograd.Function.backward`` rather than the ``.backward()`` call. Learner files in
``lines/``."""

from __future__ import annotations

from pathlib import Path

import torch

from tracer.learner.check import check, through_helper
from tracer.learner.diagnosis import Diagnosis
from tracer.learner.recorder import Record
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "lines"


def test_a_helper_given_the_wrong_argument_cites_the_call(host: PluginHost) -> None:
    trace = start_trace("rope", TraceOptions(d_out=4), host).run_to_end()
    result = check(FILES / "rope_helper_key_start.py", trace)
    assert not result.matches
    first = result.diagnoses[0]
    assert first.code == "rope-positions" and "for the keys" in first.title
    assert first.line == 18  # k = rotate(inputs @ W_key, 1)
    assert first.message.startswith("line 18, through the helper's line 10 ")


def test_a_custom_backward_is_cited_at_its_own_line(host: PluginHost) -> None:
    trace = start_trace("backward", TraceOptions(), host).run_to_end()
    result = check(FILES / "function_backward_no_rowsum.py", trace)
    assert not result.matches
    assert [(d.code, d.line) for d in result.diagnoses][:1] == [("rowsum-missing", 17)]


def _record(index: int, line: int, site: int, value: torch.Tensor) -> Record:
    return Record(index=index, op="mul", line=line, value=value, calls=(site,))


def test_a_helper_wrong_for_every_call_keeps_its_own_line() -> None:
    right, wrong = torch.eye(2), torch.ones(2, 2)
    diagnosis = Diagnosis("code", "title", 10, "line 10: something")
    both_wrong = [_record(0, 10, 17, wrong), _record(1, 10, 18, wrong * 2)]
    assert through_helper(diagnosis, both_wrong, [right]) == diagnosis
    one_wrong = [_record(0, 10, 17, right), _record(1, 10, 18, wrong)]
    moved = through_helper(diagnosis, one_wrong, [right])
    assert moved.line == 18
    assert (
        moved.message
        == "line 18, through the helper's line 10 (right for its other calls): something"
    )
    called_once = [_record(0, 10, 18, wrong)]
    assert through_helper(diagnosis, called_once, [right]) == diagnosis
