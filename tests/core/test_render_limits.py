"""Renderers draw a corner of a big tensor and never turn the rest into text; the parent
checks every step it receives; inputs are limited by tokens and values, not bytes."""

from __future__ import annotations

import json
import math
import subprocess
import tracemalloc
from pathlib import Path

import pytest
import torch

from tests import forked
from tracer.inputs.input_set import MAX_TOKENS, load_inputs
from tracer.render.text import COLUMN_LIMIT, ROW_LIMIT, format_tensor

HUGE_AXIS = """\
import torch
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    yield stage("inputs", "Inputs", empty=torch.empty(0, 2**40))
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="huge-axis", title="Huge axis", stages=("inputs",), run=run))
"""

CHECKS_OFF = """\
import torch
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    import tracer.tracing.checks as checks

    checks.check_step = lambda *args, **kwargs: None  # in its own worker only
    step = stage("inputs", "Inputs", inputs=context.inputs)
    step.tensors["inputs"] = "not a tensor"
    step.axes["ghost"] = ("token",)
    yield step
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="checks-off", title="Checks off", stages=("inputs",), run=run))
"""

BASE_EXCEPTION = """\
from tracer import RunContext, Variant, hookimpl, stage


class Escape(BaseException):
    pass


def run(context: RunContext):
    yield stage("inputs", "Inputs", inputs=context.inputs)
    raise Escape("out of here")


@hookimpl
def register_variants(register):
    register(Variant(name="escapes", title="Escapes", stages=("inputs", "more"), run=run))
"""

INTERRUPTS = BASE_EXCEPTION.replace("raise Escape", "raise KeyboardInterrupt").replace(
    '"escapes"', '"interrupts"'
)


def plugin_folder(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    for name, source in files.items():
        (folder / f"{name}.py").write_text(source)
    return folder


def run_attn(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``attn ARGV`` forked from this process (tests/forked.py), not a fresh interpreter.

    Equivalent here: what is checked is what ``attn trace`` does with a plugin's steps and
    errors; the variables set (``ATTN_ISOLATE``) are read when the command runs, and the
    plugins are loaded by the child from folders no other test uses.
    """
    import os

    return forked.run_attn(*argv, timeout=300, env={**os.environ, **(env or {})})


def test_a_big_tensor_is_drawn_by_its_corner_only() -> None:
    tensor = torch.rand(2048, 2048)
    tokens = tuple(f"t{i}" for i in range(2048))
    tracemalloc.start()
    text = format_tensor(tensor, tokens, axes=("query", "key"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * 2**20  # the whole matrix as Python floats and strings is ~300 MB
    lines = text.splitlines()
    assert len(lines) == 1 + ROW_LIMIT + 1
    assert lines[-1] == (
        f"… {2048 - ROW_LIMIT:,} more rows and {2048 - COLUMN_LIMIT:,} more columns not printed "
        "(attn trace --json prints every value)"
    )
    # The corner printed is the tensor's own corner, label for label.
    first = lines[1].split()
    assert first[0] == "t0"
    assert [float(v) for v in first[1 : COLUMN_LIMIT + 1]] == pytest.approx(
        tensor[0, :COLUMN_LIMIT].tolist(), abs=5e-5
    )
    assert first[-1] == "…"


def test_a_small_tensor_is_drawn_whole() -> None:
    text = format_tensor(torch.eye(3), ("a", "b", "c"), axes=("query", "key"))
    assert "not printed" not in text
    assert len(text.splitlines()) == 4


@pytest.mark.parametrize("isolate", ["off", "all"])
def test_an_axis_of_two_to_the_forty_is_refused(tmp_path: Path, isolate: str) -> None:
    folder = plugin_folder(tmp_path, huge_axis=HUGE_AXIS)
    result = run_attn(
        "trace", "huge-axis", "--plugins-dir", str(folder), env={"ATTN_ISOLATE": isolate}
    )
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1
    assert "tensor 'empty' has an axis of 1,099,511,627,776 positions" in result.stderr


def test_the_parent_checks_what_a_worker_with_its_checks_off_sends(tmp_path: Path) -> None:
    folder = plugin_folder(tmp_path, checks_off=CHECKS_OFF)
    result = run_attn("trace", "checks-off", "--plugins-dir", str(folder))
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert "tensor 'inputs' is a str; yield a torch tensor" in result.stderr


def test_a_base_exception_from_a_step_in_process_is_one_line(tmp_path: Path) -> None:
    folder = plugin_folder(tmp_path, escapes=BASE_EXCEPTION)
    result = run_attn("trace", "escapes", "--plugins-dir", str(folder), env={"ATTN_ISOLATE": "off"})
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"{folder / 'escapes.py'}:10: variant 'escapes' failed: Escape: out of here"
    ]


def test_a_keyboard_interrupt_from_plugin_code_is_one_line_and_130(tmp_path: Path) -> None:
    folder = plugin_folder(tmp_path, interrupts=INTERRUPTS)
    result = run_attn(
        "trace", "interrupts", "--plugins-dir", str(folder), env={"ATTN_ISOLATE": "off"}
    )
    assert result.returncode == 130
    assert result.stderr == "attn: interrupted\n"


def test_a_learners_8192_token_file_of_width_64_loads(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    rows = [[(i * 7 + j) % 10 / 10 for j in range(64)] for i in range(8192)]
    path.write_text(json.dumps({"tokens": [f"w{i}" for i in range(8192)], "embeddings": rows}))
    assert path.stat().st_size > 1024 * 1024  # over the old byte limit
    inputs = load_inputs(str(path))
    assert len(inputs.tokens) == 8192 and inputs.d_in == 64
    assert inputs.embeddings[8191][63] == rows[8191][63]


def test_the_fast_json_path_reads_what_yaml_reads(tmp_path: Path) -> None:
    document = {
        "tokens": ["a", "b"],
        "embeddings": [[1, 0.5], [2, -3e-2]],
        "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 2], [3, 4]], "value": [[0, 1], [1, 0]]},
        "padding": [False, True],
        "description": "two",
    }
    as_json = tmp_path / "set.json"
    as_json.write_text(json.dumps(document))
    as_yaml = tmp_path / "set.yaml"
    as_yaml.write_text(json.dumps(document))  # JSON is YAML: the slow path
    fast, slow = load_inputs(str(as_json)), load_inputs(str(as_yaml))
    assert fast == type(fast)(**{**slow.__dict__, "name": "set", "source": str(as_json)})


def test_a_repeated_key_in_json_is_still_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    path.write_text('{"tokens": ["a"],\n "tokens": ["b"],\n "embeddings": [[1]]}\n')
    with pytest.raises(Exception, match=r"twice\.json:2"):
        load_inputs(str(path))


def test_too_many_tokens_are_refused_by_count(tmp_path: Path) -> None:
    path = tmp_path / "many.json"
    count = MAX_TOKENS + 1
    path.write_text(json.dumps({"tokens": ["x"] * count, "embeddings": [[1]] * count}))
    with pytest.raises(Exception, match=f"{count:,} tokens; the most the tool can draw is"):
        load_inputs(str(path))


def test_a_token_that_appears_twice_is_not_silently_picked(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("tokens: [the, cat, saw, the, dog]\nembeddings: [[1], [2], [3], [4], [5]]\n")
    result = run_attn("trace", "vectorized", "--inputs", str(path), "--query", "the")
    assert result.returncode == 2
    assert result.stderr == (
        "attn: --query 'the' is ambiguous: it is tokens 0, 3 (numbered from 0); "
        "give the position instead, e.g. --query 0\n"
    )
    assert run_attn("trace", "vectorized", "--inputs", str(path), "--query", "cat").returncode == 0


HUGE_MESSAGE = """\
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    yield stage("inputs", "Inputs", inputs=context.inputs)
    raise RuntimeError("x" * 50_000_000)


@hookimpl
def register_variants(register):
    register(Variant(name="loud", title="Loud", stages=("inputs", "more"), run=run))
"""


@pytest.mark.parametrize("isolate", ["off", "plugins"])
def test_a_50_megabyte_message_is_cut_before_the_terminal(tmp_path: Path, isolate: str) -> None:
    folder = plugin_folder(tmp_path, loud=HUGE_MESSAGE)
    result = run_attn("trace", "loud", "--plugins-dir", str(folder), env={"ATTN_ISOLATE": isolate})
    assert result.returncode == 3
    assert len(result.stderr) < 10_000
    assert result.stderr.count("\n") == 1
    assert "more characters not shown" in result.stderr


def test_a_keyboard_interrupt_from_a_plugin_in_its_worker_is_the_plugins_failure(
    tmp_path: Path,
) -> None:
    folder = plugin_folder(tmp_path, interrupts=INTERRUPTS)
    result = run_attn("trace", "interrupts", "--plugins-dir", str(folder))
    assert result.returncode == 3
    assert result.stderr == (
        f"{folder / 'interrupts.py'}: variant 'interrupts' failed: raised KeyboardInterrupt\n"
    )


def _streamed(document: object) -> str:
    from tracer.render.text import write_json

    pieces: list[str] = []
    write_json(document, pieces.append)
    return "".join(pieces)


def test_streamed_json_is_exactly_what_json_dumps_writes() -> None:
    from tracer.render.text import LazyTensor, tensor_json

    tensors = [
        torch.tensor(3.5),
        torch.tensor([1.0, float("nan"), float("-inf"), -0.0]),
        torch.rand(3, 4, 2),
        torch.arange(6).reshape(2, 3),
        torch.tensor([[True, False]]),
        torch.zeros(2, 0),
        torch.zeros(0, 3),
        torch.rand(70_000),  # more than one block of a 1-d tensor
    ]
    for tensor in tensors:
        lazy = {"a": [1, "x\x1b"], "t": LazyTensor(tensor), "e": {}, "l": []}
        eager = {"a": [1, "x\x1b"], "t": tensor_json(tensor), "e": {}, "l": []}
        assert _streamed(lazy) == json.dumps(eager, indent=1), tuple(tensor.shape)


def test_trace_json_streams_the_same_document(tmp_path: Path) -> None:
    from tracer.plugin_host import PluginHost
    from tracer.render.text import LazyTensor, trace_json
    from tracer.tracing.runner import TraceOptions, start_trace

    host = PluginHost(use_env=False)
    for name in ("vectorized", "multihead", "naive-loop"):
        eager = trace_json(start_trace(name, TraceOptions(query="1"), host), substeps=True)
        lazy = trace_json(
            start_trace(name, TraceOptions(query="1"), host), substeps=True, tensor=LazyTensor
        )
        assert _streamed(lazy) == json.dumps(eager, indent=1), name


def test_integer_tensors_print_whole_numbers() -> None:
    # Token ids and counts are integers: "17", never "17.0000", which reads like a measurement.
    table = format_tensor(torch.tensor([17, 9, 0]), ("R", "J", "A"), axes=("token",))
    assert table.splitlines()[-1].split() == ["17", "9", "0"]
    # A float table whose values are all whole (a count, a 0/1 mask) reads the same way;
    # one fraction anywhere in it and every cell keeps its four decimals.
    floats = format_tensor(torch.tensor([17.0, 9.0, -math.inf]), ("R", "J", "A"), axes=("token",))
    assert floats.splitlines()[-1].split() == ["17", "9", "-inf"]
    mixed = format_tensor(torch.tensor([17.0, 0.5]), ("R", "J"), axes=("token",))
    assert mixed.splitlines()[-1].split() == ["17.0000", "0.5000"]
