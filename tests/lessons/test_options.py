"""The trace options are declared once: one validator, one set of bounds, the user's own words."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tracer.options import MAX_D_OUT, TRACE_OPTIONS

Attn = Callable[..., tuple[int, str, str]]


def lesson(tmp_path: Path, options: str, step_options: str = "") -> Path:
    path = tmp_path / "opts.yaml"
    step = f", options: {{{step_options}}}" if step_options else ""
    path.write_text(
        "title: Options\n"
        "summary: s\n"
        f"options: {{{options}}}\n"
        "steps:\n"
        f"  - show: {{variant: trainable, stage: weights{step}}}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("written", "column", "message"),
    [
        (
            f"d_out: {MAX_D_OUT + 904}",
            18,
            f"d_out must be at most {MAX_D_OUT}, got {MAX_D_OUT + 904}",
        ),
        ("d_out: 0", 18, "d_out must be at least 1, got 0"),
        ("dropout: 1.5", 20, "dropout must be at least 0 and below 1, got 1.5"),
        ("seed: 99999999999999999999", 17, "seed must be a 64-bit integer"),
        ("init: rnd", 17, "unknown init 'rnd' (did you mean 'rand'?); choose one of"),
    ],
)
def test_a_lessons_bad_option_is_reported_at_its_value_in_its_own_words(
    tmp_path: Path, attn: Attn, written: str, column: int, message: str
) -> None:
    path = lesson(tmp_path, written)
    value = written.partition(": ")[2]
    assert path.read_text(encoding="utf-8").splitlines()[2].index(value) + 1 == column
    status, out, err = attn("lesson", "check", str(path))
    assert status == 1 and err == ""
    assert out.startswith(f"{path}:3:{column}: {message}")
    assert "--" not in out  # no command-line flag the author never wrote


def test_a_steps_own_option_is_checked_the_same_way(tmp_path: Path, attn: Attn) -> None:
    path = lesson(tmp_path, "seed: 1", "d_out: 5000")
    status, out, _ = attn("lesson", "check", str(path))
    assert status == 1
    column = path.read_text(encoding="utf-8").splitlines()[4].index("5000") + 1
    assert out == f"{path}:5:{column}: d_out must be at most {MAX_D_OUT}, got 5000\n"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--d-out", "5000", f"attn: --d-out must be at most {MAX_D_OUT}, got 5000"),
        ("--init", "rnd", "attn: unknown --init 'rnd' (did you mean 'rand'?)"),
        ("--dropout", "1", "attn: --dropout must be at least 0 and below 1, got 1"),
    ],
)
def test_the_command_line_keeps_its_flags_and_the_same_bounds(
    attn: Attn, flag: str, value: str, message: str
) -> None:
    status, _, err = attn("trace", "trainable", flag, value)
    assert status == 2
    assert err.startswith(message)


def test_the_trace_options_are_declared_like_a_variants() -> None:
    names = [option.name for option in TRACE_OPTIONS]
    assert names == ["seed", "init", "d_out", "dropout"]
    d_out = next(option for option in TRACE_OPTIONS if option.name == "d_out")
    assert (d_out.min, d_out.max) == (1, MAX_D_OUT)
