"""Sizes are decided before work starts: every built-in declares its cost, and a run past a limit
is refused in one line, exit status 2, naming what to change, before any tensor is made."""

from __future__ import annotations

import json
import os
import resource
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests import forked
from tracer.errors import PluginError, UsageError
from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.plugin_host.host import ORIGIN_BUILTIN
from tracer.tracing import budget
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import Cost, Sizes, Stage, SubStep, Variant

HOST = PluginHost(use_env=False)
BUILTINS = sorted(name for name, owner in HOST.owner.items() if owner.origin == ORIGIN_BUILTIN)
QUICK = 60  # seconds: each refusal comes before any work, so this is only a safety net


def _inputs(count: int, width: int = 4) -> InputSet:
    return InputSet(
        name="long",
        tokens=tuple(f"t{i}" for i in range(count)),
        embeddings=tuple(
            tuple(((i * 7 + j) % 10) / 10 for j in range(width)) for i in range(count)
        ),
    )


@pytest.fixture(scope="module")
def long_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Inputs files of 8,192 and 16,384 tokens, as a learner would give them (--inputs)."""
    folder = tmp_path_factory.mktemp("long")
    made = {}
    for count in (8192, 16384):
        path = folder / f"t{count}.json"
        rows = [[((i * 7 + j) % 10) / 10 for j in range(4)] for i in range(count)]
        path.write_text(json.dumps({"tokens": [f"w{i}" for i in range(count)], "embeddings": rows}))
        made[count] = path
    return made


def _attn(*argv: str, env: dict[str, str] | None = None, **kwargs: Any) -> tuple[int, str, str]:
    done = forked.run_attn(*argv, env={**os.environ, **(env or {})}, timeout=QUICK, **kwargs)
    return done.returncode, done.stdout, done.stderr


# Every built-in declares its cost, and the declaration bounds what the run does --------------


def test_every_built_in_declares_its_cost() -> None:
    assert len(BUILTINS) == 19
    assert [name for name in BUILTINS if HOST.variant(name).cost is None] == []


# Sizes and options each variant is measured at: (tokens, d_out, options, query).
RUNS: dict[str, list[tuple[int, int, dict[str, Any], int | None]]] = {
    "flash-backward": [(9, 2, {"tile": 1}, None), (23, 4, {"tile": 3, "causal": True}, None)],
    "online-softmax": [(9, 2, {"tile": 1}, None), (23, 4, {"tile": 5, "causal": True}, 2)],
    "paged-kv-cache": [(9, 2, {"block": 1}, None), (23, 4, {"block": 3}, 5)],
    "sliding-window": [(9, 2, {"window": 20}, None), (23, 4, {"window": 2}, 3)],
    "grouped-query": [(9, 4, {"heads": 4, "kv_heads": 2}, None), (23, 8, {"heads": 8}, 1)],
    "multihead": [(9, 4, {"heads": 4}, None), (23, 6, {"heads": 3}, 1)],
    "multihead-wrapper": [(9, 4, {"heads": 4}, None), (23, 6, {"heads": 3}, 1)],
    "mla": [
        (9, 4, {"heads": 2, "rank": 5, "rope_dim": 4}, None),
        (23, 6, {"heads": 3, "rank": 3, "absorb": True}, 2),
    ],
    "rope": [(9, 4, {"scaling": "ntk"}, None), (23, 6, {"scaling": "yarn"}, 1)],
    "training": [(9, 2, {"steps": 7}, None), (23, 4, {"steps": 3}, None)],
    "backward": [(9, 2, {"causal": True}, None), (70, 4, {}, 3), (70, 2, {}, None)],
}
DEFAULT_RUNS = [(9, 2, {}, None), (23, 4, {}, 1)]
CASES = [(name, *run) for name in BUILTINS for run in RUNS.get(name, DEFAULT_RUNS)]


@pytest.mark.parametrize(("name", "tokens", "d_out", "options", "query"), CASES)
def test_a_declared_cost_bounds_what_the_run_does(
    name: str, tokens: int, d_out: int, options: dict[str, Any], query: int | None
) -> None:
    variant = HOST.variant(name)
    if name == "induction":  # its own letters, no embeddings
        inputs = InputSet(
            name="l", tokens=tuple("ABCDEFGHIJ"[i % 10] for i in range(tokens)), embeddings=()
        )
        d_out = 2
    elif name == "model":  # text, split by the shipped model's tokenizer: one letter a token
        text = " ".join("ABCDEFGHIJ"[i % 10] for i in range(tokens))
        inputs = InputSet(name="l", tokens=(), embeddings=(), text=text)
        d_out = 2
    elif name == "cross-attention":
        inputs = _inputs(tokens, 3)
    else:
        inputs = _inputs(tokens)
    trace = start_trace(
        name, TraceOptions(inputs=inputs, d_out=d_out, options=options, query=query), HOST
    )
    sizes = Sizes(
        tokens=tokens,
        d_in=len(inputs.embeddings[0]) if inputs.embeddings else 0,
        d_out=d_out,
        options=trace.context.options,
        query=query,
        source_tokens=0 if trace.context.source is None else len(trace.context.source.tokens),
        d_source=0 if trace.context.source is None else int(trace.context.source.inputs.shape[1]),
    )
    assert variant.cost is not None
    declared = variant.cost(sizes)
    loops: dict[str, int] = {}
    values = held = table = 0
    for step in trace:
        numbers = sum(tensor.numel() for tensor in step.tensors.values())
        table = max([table, *(tensor.numel() for tensor in step.tensors.values())])
        if isinstance(step, SubStep):
            loops[step.stage] = loops.get(step.stage, 0) + 1
            values += numbers
        else:
            assert isinstance(step, Stage)
            held += numbers
    assert max(loops.values(), default=0) <= declared.substeps
    assert values <= declared.values
    assert held <= declared.elements
    assert table <= declared.table
    # A bound, not a guess: within a small factor of what the stages keep, so a refusal is
    # fair (with one query followed they keep rows of tables the run still computes whole).
    if query is None:
        assert declared.elements <= 12 * held + 4096


# The cases of the hostile corpus: refused in one line, exit 2, naming what to change ---------


def test_backward_over_8192_tokens_is_refused_before_it_starts(long_files: dict[int, Path]) -> None:
    status, out, err = _attn("trace", "backward", "--inputs", str(long_files[8192]))
    assert (status, out) == (2, "")
    # Its four or five tokens x tokens tables (S, P, dP, dS and the masked scores).
    assert err == (
        "attn: variant 'backward' over 8,192 tokens would hold 335,872,048 numbers (1.25 GiB); "
        "the limit is 268,435,456 (1.00 GiB): give fewer tokens\n"
    )


def test_flash_backward_with_tile_1_over_8192_tokens_names_the_tile(
    long_files: dict[int, Path],
) -> None:
    status, out, err = _attn(
        "trace", "flash-backward", "-o", "tile=1", "--inputs", str(long_files[8192])
    )
    assert (status, out) == (2, "")
    assert err == (
        "attn: variant 'flash-backward' over 8,192 tokens with tile=1 would make 67,108,864 "
        "sub-steps in one loop; the limit is 16,384: give a larger -o tile or fewer tokens\n"
    )
    # What the tiles are for: over 8,192 tokens with tile=256 nothing is past a limit (it never
    # holds a tokens x tokens table), where backward is refused.
    variant = HOST.variant("flash-backward")
    fits = Sizes(8192, 4, 2, {"tile": 256, "upstream": "ones", "causal": False})
    assert budget.check_cost(variant, fits, str, str) is not None
    with pytest.raises(UsageError, match="would hold"):
        budget.check_cost(HOST.variant("backward"), fits, str, str)


def test_rope_over_16384_tokens_is_refused_even_with_one_query(
    long_files: dict[int, Path],
) -> None:
    status, out, err = _attn("trace", "rope", "--inputs", str(long_files[16384]), "--query", "3")
    assert (status, out) == (2, "")
    # Its three score tables are computed whole even for one query, so --query is not offered.
    assert err.startswith("attn: variant 'rope' over 16,384 tokens would hold ")
    assert err.endswith("; the limit is 268,435,456 (1.00 GiB): give fewer tokens\n")
    assert err.count("\n") == 1


def test_paged_kv_cache_with_block_1_over_16384_tokens_is_refused(
    long_files: dict[int, Path],
) -> None:
    status, out, err = _attn(
        "trace", "paged-kv-cache", "-o", "block=1", "--inputs", str(long_files[16384])
    )
    assert (status, out) == (2, "")
    assert err.startswith("attn: variant 'paged-kv-cache' over 16,384 tokens would yield ")
    assert err.endswith(
        "numbers in its sub-steps; the limit is 536,870,912: give fewer tokens or follow one "
        "query (--query, a lesson's query:)\n"
    )


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            ("-o", "base=1e308", "-o", "factor=1e308", "-o", "scaling=ntk"),
            "-o base must be at most 1e+12, got 1e+308",
        ),
        (
            ("-o", "factor=1e308", "-o", "scaling=ntk"),
            "-o factor must be at most 1e+06, got 1e+308",
        ),
    ],
)
def test_rope_options_that_overflow_are_refused_at_the_options(
    options: tuple[str, ...], said: str
) -> None:
    status, out, err = _attn("trace", "rope", "--d-out", "4", *options)
    assert (status, out, err) == (2, "", f"attn: {said}\n")


def test_rope_at_its_bounds_stays_in_float32() -> None:
    cost = HOST.variant("rope").cost
    assert cost is not None
    for d_out in (4, 6, 64):
        options = {"base": 1e12, "factor": 1e6, "scaling": "ntk", "pairing": "interleaved"}
        largest = cost(Sizes(6, 3, d_out, options)).largest
        assert largest <= budget.FLOAT32_MAX
    done = start_trace(
        "rope",
        TraceOptions(d_out=4, options={"base": 1e12, "factor": 1e6, "scaling": "ntk"}),
        HOST,
    ).run_to_end()
    assert done.finished


def test_an_int_option_past_its_max_or_64_bits_is_refused_at_the_options(plugins: Path) -> None:
    status, out, err = _attn("trace", "sliding-window", "-o", "window=" + "9" * 30)
    assert (status, out, err) == (2, "", f"attn: -o window must be at most 16384, got {'9' * 30}\n")
    # 16,384 gradient-descent steps, each a forward and a backward pass, ran for minutes.
    status, out, err = _attn("trace", "training", "-o", "steps=16384")
    assert (status, out, err) == (2, "", "attn: -o steps must be at most 2048, got 16384\n")
    # An int option declared without a max is held to the 64 bits torch takes.
    status, out, err = _attn(
        "trace", "no-cost", "--plugins-dir", str(plugins), "-o", "copies=" + "9" * 50
    )
    assert (status, out) == (2, "")
    assert err == (
        "attn: -o copies must be a 64-bit integer, between -9223372036854775808 and "
        "9223372036854775807, got a number of 50 digits\n"
    )


def test_mla_with_wide_ranks_is_refused_by_the_size_limit(long_files: dict[int, Path]) -> None:
    status, out, err = _attn(
        "trace", "mla", "-o", "rank=4096", "--d-out", "4096", "-o", "absorb=true", "--heads", "64"
    )
    assert (status, out) == (2, "")
    assert err == (
        "attn: variant 'mla' over 6 tokens with rank=4096, heads=64 and d_out=4096 would make a "
        "tensor of 1,073,741,824 numbers; one step may show at most 268,435,456: give a smaller "
        "-o rank, a smaller --heads or a smaller --d-out\n"
    )
    # Over 8,192 tokens even one head's score tables are past what a run may hold.
    status, out, err = _attn("trace", "mla", "--inputs", str(long_files[8192]))
    assert (status, out) == (2, "")
    assert err.startswith("attn: variant 'mla' over 8,192 tokens would hold ")
    assert err.endswith("; the limit is 268,435,456 (1.00 GiB): give fewer tokens\n")


def test_a_tensor_past_what_a_step_may_show_is_refused_before_it_is_made() -> None:
    # (20 heads, rank 4096, d_out 4080): W_uv W_out folded per head is 334 million numbers.
    status, out, err = _attn(
        "trace", "mla", "-o", "rank=4096", "--d-out", "4080", "-o", "absorb=true", "--heads", "20"
    )
    assert (status, out) == (2, "")
    assert err == (
        "attn: variant 'mla' over 6 tokens with rank=4096, heads=20 and d_out=4080 would make a "
        "tensor of 334,233,600 numbers; one step may show at most 268,435,456: give a smaller "
        "-o rank, a smaller --heads or a smaller --d-out\n"
    )


def _address_space_of(megabytes: int) -> None:
    """In the child: what it has mapped now, and ``megabytes`` more (as ``ulimit -v`` would)."""
    with open("/proc/self/statm") as handle:
        used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = used + megabytes * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def test_mla_past_the_memory_a_process_may_map_is_refused_not_crashed() -> None:
    status, out, err = _attn(
        "trace",
        "mla",
        "-o",
        "rank=4096",
        "--d-out",
        "4096",
        "-o",
        "absorb=true",
        "--heads",
        "8",
        preexec_fn=lambda: _address_space_of(512),
    )
    assert (status, out) == (2, "")
    assert err.startswith("attn: variant 'mla' over 6 tokens with rank=4096, heads=8 and ")
    assert "more (this process's address-space limit, ulimit -v): give a smaller -o rank" in err
    assert err.count("\n") == 1


def test_a_plugin_variant_is_refused_past_its_worker_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATTN_ISOLATE", "all")
    monkeypatch.setenv("ATTN_PLUGIN_MEMORY_MB", "64")
    with pytest.raises(UsageError) as raised:
        start_trace("vectorized", TraceOptions(inputs=_inputs(4096)), HOST)
    assert str(raised.value).endswith("more (ATTN_PLUGIN_MEMORY_MB): give fewer tokens")
    assert "would hold 33,603,584 numbers (128.19 MiB); it may allocate 64.00 MiB" in str(
        raised.value
    )


# A third-party variant declares its cost the same way -----------------------------------------

PLUGIN = textwrap.dedent(
    """
    import math
    import torch
    from tracer import Cost, Option, Sizes, Variant, hookimpl, stage

    def banded(run):
        scores = run.inputs @ run.inputs.T * run.options["scale"]
        yield stage("scores", "Scores", axes=("query", "key"), scores=scores)
        return scores

    def cost(sizes: Sizes) -> Cost:
        n = sizes.tokens
        return Cost(
            elements=n * n * sizes.options["copies"],
            largest=sizes.options["scale"] * 10.0,
            smaller=("copies", "scale"),
        )

    def broken(sizes):
        return 1 / 0

    def wrong(sizes):
        return {"elements": 3}

    @hookimpl
    def register_variants(register):
        options = (
            Option("copies", int, 1, "tables kept", min=1),
            Option("scale", float, 1.0, "what scores are multiplied by", min=0.0),
        )
        for name, function in (("banded", cost), ("broken-cost", broken), ("wrong-cost", wrong)):
            register(Variant(name=name, title=name, run=banded, stages=("scores",),
                             uses_weights=False, options=options, cost=function))
        register(Variant(name="no-cost", title="no cost", run=banded, stages=("scores",),
                         uses_weights=False, options=options))
    """
)


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "banded.py").write_text(PLUGIN)
    return folder


def test_a_plugins_declared_cost_is_refused_the_same_way(plugins: Path, tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    path.write_text(
        json.dumps({"tokens": [f"w{i}" for i in range(8192)], "embeddings": [[1.0, 0.5]] * 8192})
    )
    status, out, err = _attn(
        "trace", "banded", "--plugins-dir", str(plugins), "--inputs", str(path), "-o", "copies=20"
    )
    assert (status, out) == (2, "")
    assert err == (
        "attn: variant 'banded' over 8,192 tokens with copies=20 would hold 1,342,177,280 "
        "numbers (5.00 GiB); the limit is 268,435,456 (1.00 GiB): give a smaller -o copies or "
        "fewer tokens\n"
    )
    # The float range: 1e38 × 10 is past float32, and only the scale brings it back.
    status, out, err = _attn("trace", "banded", "--plugins-dir", str(plugins), "-o", "scale=1e38")
    assert (status, out) == (2, "")
    assert err == (
        "attn: variant 'banded' over 6 tokens with scale=1e+38 would make numbers of 1e+39; "
        "the largest float32 is 3.403e+38: give a smaller -o scale\n"
    )


def test_a_plugins_cost_within_the_limits_runs(plugins: Path) -> None:
    host = PluginHost([plugins], use_env=False)
    for name in ("banded", "no-cost"):
        assert start_trace(name, TraceOptions(options={"copies": 3}), host).run_to_end().finished
    # Without a declared cost, only the limits checked while it runs apply: as before.
    big = start_trace(
        "no-cost", TraceOptions(inputs=_inputs(600, 2), options={"copies": 10**6}), host
    )
    assert big.run_to_end().finished


def test_a_cost_function_that_fails_is_the_plugins_failure(plugins: Path) -> None:
    host = PluginHost([plugins], use_env=False)
    with pytest.raises(PluginError) as raised:
        start_trace("broken-cost", TraceOptions(), host)
    assert str(raised.value).endswith(
        "banded.py:19: variant 'broken-cost': its cost= function failed: ZeroDivisionError: "
        "division by zero"
    )
    assert raised.value.exit_status == 3
    assert raised.value.location is not None
    assert raised.value.location.path == str(plugins / "banded.py")
    with pytest.raises(PluginError, match="returned dict, not a Cost"):
        start_trace("wrong-cost", TraceOptions(), host)


def test_a_cost_that_is_not_a_function_is_refused_where_it_is_declared() -> None:
    def run(context: Any) -> Any:
        yield  # pragma: no cover

    with pytest.raises(ValueError, match="cost= of variant 'x' must be a function"):
        Variant(name="x", title="x", run=run, stages=("a",), cost=Cost(substeps=3))  # type: ignore[arg-type]


def test_the_check_comes_before_any_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    made: list[str] = []
    original = torch.tensor

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append("tensor")
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "tensor", counting)
    with pytest.raises(UsageError, match="would make 67,108,864 sub-steps"):
        start_trace("naive-loop", TraceOptions(inputs=_inputs(8192)), HOST)
    assert made == []
