"""Every labelled learner file gets the verdict, the line and the mistake its label names.

Labels are the last line of each file (``# expect: OPTIONS -> CODE at LINE`` or
``-> ok``), written by hand next to the code; ``benchmarks/check_corpus.py``
reads the same labels and prints the shares.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from benchmarks.check_corpus import Case, cases, failing_configuration

Attn = Callable[..., tuple[int, str, str]]
CASES = cases()


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 50
    assert sum(case.code is not None for case in CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.path.name)
def test_labelled_file(attn: Attn, case: Case) -> None:
    status, out, err = attn("check", str(case.path), *case.options, "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    if case.code is None:
        assert status == 0, out
        assert report["matches"] is True
        return
    assert status == 1, out + err
    assert report["matches"] is False
    report = failing_configuration(report)
    first = report["diagnoses"][0]
    assert first["code"] == case.code
    assert case.line is not None and first["line"] in (case.line, case.line + 1)
    assert report["matches"] is False  # the configuration that found it says so too
