"""Bad options for the new variants: one line naming the problem, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.variants.problems import HOST
from tracer.variant import Option

Attn = Callable[..., tuple[int, str, str]]

BAD = [
    (["sliding-window", "-o", "window=0"], "attn: -o window must be at least 1, got 0"),
    (["sliding-window", "-o", "window=two"], "attn: -o window must be a whole number, got 'two'"),
    (["online-softmax", "-o", "tile=0"], "attn: -o tile must be at least 1, got 0"),
    (
        ["online-softmax", "-o", "causal=maybe"],
        "attn: -o causal must be true or false, got 'maybe'",
    ),
    (["training", "-o", "steps=0"], "attn: -o steps must be at least 1, got 0"),
    (["training", "-o", "lr=0"], "attn: -o lr must be above 0, got 0"),
    (["training", "-o", "lr=-1"], "attn: -o lr must be at least 0, got -1"),
    (
        ["grouped-query", "--heads", "4", "-o", "kv_heads=3", "--d-out", "4"],
        "attn: kv_heads 3 does not divide heads 4: every key/value head serves the same "
        "number of query heads (kv_heads may be 1, 2, 4)",
    ),
    (
        ["grouped-query", "--heads", "3"],
        "attn: d_out 2 is not divisible by heads 3: grouped-query splits the projections' "
        "2 columns into 3 equal heads (set --d-out or --heads)",
    ),
    (
        ["online-softmax", "--dropout", "0.2"],
        "attn: variant 'online-softmax' has no dropout (it never holds the weights to drop); "
        "leave --dropout at 0",
    ),
    (
        ["training", "--dropout", "0.2"],
        "attn: variant 'training' trains without dropout; leave --dropout at 0",
    ),
]


@pytest.mark.parametrize(("argv", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_option_is_one_line_and_status_2(attn: Attn, argv: list[str], message: str) -> None:
    status, out, err = attn("trace", *argv)
    assert (status, out, err) == (2, "", message + "\n")


def test_from_a_real_process_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracer", "trace", "sliding-window", "-o", "window=0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "attn: -o window must be at least 1, got 0\n"


@pytest.mark.parametrize(
    "name",
    [
        "sliding-window",
        "grouped-query",
        "kv-cache",
        "online-softmax",
        "training",
        "cross-attention",
        "rope",
        "mla",
        "paged-kv-cache",
    ],
)
def test_each_variant_declares_its_options_with_help(name: str) -> None:
    variant = HOST.variant(name)
    for option in variant.options:
        assert isinstance(option, Option) and option.help
    assert variant.description
