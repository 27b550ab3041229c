"""The trace options are declared once: one validator, one set of bounds, the user's own words."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tracer.lessons.check import check_lesson
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import LessonError, parse_lesson
from tracer.lessons.model import Options, OptionValue
from tracer.options import MAX_D_OUT, TRACE_OPTIONS
from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]


@pytest.fixture
def host() -> PluginHost:
    return PluginHost(use_env=False)


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


# heads: an ordinary declared option, with its old spellings kept ------------------------

OLD_PLUGIN = """
import torch
from tracer import Variant, hookimpl, stage


def run(ctx):
    heads = ctx.extra.get("heads", 1)
    yield stage("heads", "How many heads it was given", axes=(), heads=torch.tensor(float(heads)))
    return torch.tensor(float(heads))


@hookimpl
def register_variants(register):
    register(Variant(name="old-heads", title="Reads heads, declares no options", run=run,
                     stages=("heads",), uses_weights=False))
"""


@pytest.fixture
def old_host(tmp_path: Path) -> PluginHost:
    """A third-party variant written before variants declared options: it reads
    ``run.extra["heads"]`` and declares nothing."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "old_heads.py").write_text(OLD_PLUGIN, encoding="utf-8")
    host = PluginHost([folder], use_env=False)
    assert "old-heads" in host.variants, host.failures
    return host


def heads_lesson(body: str) -> str:
    return "title: Heads\nsummary: s\n" + body


def test_heads_is_read_like_any_declared_option(host: PluginHost) -> None:
    """heads and window: the same reading, the same wording, each at its own line:column."""
    text = heads_lesson(
        "steps:\n"
        "  - show: {variant: multihead, stage: weights, options: {heads: 65}}\n"
        "  - show: {variant: sliding-window, stage: weights, options: {window: 0}}\n"
    )
    with pytest.raises(LessonError) as raised:
        parse_lesson(text, "h.yaml", host)
    found = [f"{p.line}:{p.column}: {p.message}" for p in raised.value.problems]
    lines = text.splitlines()
    assert found == [
        f"4:{lines[3].index('65') + 1}: option 'heads' must be at most 64, got 65",
        f"5:{lines[4].index('0}') + 1}: option 'window' must be at least 1, got 0",
    ]


def test_a_lessons_heads_reaches_the_variant_as_one_of_its_options(host: PluginHost) -> None:
    lesson = parse_lesson(
        heads_lesson(
            "options: {heads: 4, d_out: 4}\nsteps:\n  - show: {variant: multihead, stage: split}\n"
            "  - show: {variant: multihead, stage: split, options: {heads: 1}}\n"
        ),
        host=host,
    )
    runner = LessonRunner(lesson, host)
    first, second = (step.tables()[0] for step in lesson.steps)
    assert [value.name for value in first.options.values] == ["heads"]
    assert first.options.heads == 4 and second.options.heads == 1  # the old field agrees
    # The split stage holds one slice per head: what the run was given, not what was typed.
    assert runner.tensor(first).tensor.shape[0] == 4
    assert runner.tensor(second).tensor.shape[0] == 1


def test_heads_is_left_out_for_a_variant_with_other_options(host: PluginHost) -> None:
    """As before: a lesson's heads is not for sliding-window, which declares window only."""
    lesson = parse_lesson(
        heads_lesson(
            "options: {heads: 3}\nsteps:\n"
            "  - show: {variant: sliding-window, stage: weights, options: {heads: 2}}\n"
        ),
        host=host,
    )
    runner = LessonRunner(lesson, host)
    (ref,) = lesson.steps[0].tables()
    assert "heads" not in runner.variant_options(ref.variant, ref.options)
    assert check_lesson(lesson, host) == []


def test_a_variant_that_declares_no_options_is_still_passed_heads(old_host: PluginHost) -> None:
    lesson = parse_lesson(
        heads_lesson("options: {heads: 3}\nsteps:\n  - show: {variant: old-heads, stage: heads}\n"),
        host=old_host,
    )
    (ref,) = lesson.steps[0].tables()
    assert LessonRunner(lesson, old_host).tensor(ref).tensor.item() == 3.0
    with pytest.raises(LessonError, match="heads must be at least 1, got 0"):
        parse_lesson(
            heads_lesson(
                "steps:\n  - show: {variant: old-heads, stage: heads, options: {heads: 0}}\n"
            ),
            host=old_host,
        )


def test_heads_on_the_command_line_and_in_python(
    old_host: PluginHost, attn: Attn, tmp_path: Path
) -> None:
    from tracer.testing import run_variant

    assert (
        run_variant("multihead", heads=4, d_out=4).stage("split").tensors["queries"].shape[0] == 4
    )
    trace = run_variant("old-heads", heads=2, plugins_dir=[tmp_path / "plugins"])
    assert trace.stage("heads").tensors["heads"].item() == 2.0
    # The legacy declaration bounds it for a variant that does not declare it: one set of bounds.
    status, _, err = attn("trace", "trainable", "--heads", "0")
    assert status == 2 and err.startswith("attn: --heads must be at least 1, got 0")
    assert attn("trace", "trainable", "--heads", "2")[0] == 0


def test_options_built_the_old_way_keep_their_heads() -> None:
    old = Options(heads=2)
    assert old.heads == 2 and old.variant_options() == {"heads": 2}
    new = Options(values=(OptionValue("heads", 3, 4, 10), OptionValue("window", 2)))
    assert new.heads == 3 and new.variant_options() == {"heads": 3, "window": 2}
    assert new.over(old).heads == 3 and old.over(new).heads == 2
    assert Options().over(old).heads == 2 and Options().heads is None
