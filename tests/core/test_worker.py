"""Third-party variants run in a worker process with a time and a memory limit.

The fixture plugin ``misbehaving`` computes its first stage, then does what
``-o do=...`` says: spin, sleep, allocate without end, kill itself, read stdin,
print a flood, change torch's default dtype. Every case must end with the
documented exit status and one line that names the problem, and leave the
process running ``attn`` (here: pytest) unharmed.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.conftest import FIXTURES
from tracer.errors import TracerError
from tracer.plugin_host import PluginHost
from tracer.plugin_host.host import ORIGIN_BUILTIN
from tracer.processes import descendants
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.tracing.stepper import Cancelled, Stepper
from tracer.tracing.worker import WorkerTrace
from tracer.variant import Stage, SubStep

Attn = Callable[..., tuple[int, str, str]]
HOSTILE = FIXTURES / "hostile_plugins"
PLUGIN_FILE = HOSTILE / "misbehaving.py"


def line_of(text: str) -> int:
    """The 1-based line of the fixture plugin that contains ``text``."""
    for number, line in enumerate(PLUGIN_FILE.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} is not in {PLUGIN_FILE}")


def run(attn: Attn, action: str, *extra: str) -> tuple[int, str, str]:
    return attn("trace", "misbehaving", "--plugins-dir", str(HOSTILE), "-o", f"do={action}", *extra)


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTN_STEP_TIMEOUT", "1")


def test_a_plugins_variant_runs_in_a_worker_and_a_builtin_in_process() -> None:
    host = PluginHost([HOSTILE], use_env=False)
    context_trace = start_trace("misbehaving", TraceOptions(), host)
    assert isinstance(context_trace, WorkerTrace)
    assert type(start_trace("masked", TraceOptions(), host)) is Trace


@pytest.mark.parametrize(
    ("action", "where"), [("spin", "while True:"), ("sleep", "time.sleep(10_000)")]
)
def test_a_step_over_the_time_limit_is_stopped_at_the_plugins_line(
    attn: Attn, short_limit: None, action: str, where: str
) -> None:
    started = time.monotonic()
    status, out, err = run(attn, action)
    assert status == 3
    assert "== stage 1/2: inputs" in out  # the steps before the stuck one were printed
    line = err.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"{re.escape(str(PLUGIN_FILE))}:(\d+): variant 'misbehaving' took more than 1 s on one "
        r"step and was stopped; if it is only slow, raise the limit with ATTN_STEP_TIMEOUT=SECONDS",
        line,
    ), line
    # The line the variant was stuck on (a spin loop is caught on its condition or its body).
    reported = int(line.split(":")[1])
    assert reported in (line_of(where), line_of(where) + 1)
    assert time.monotonic() - started < 30  # a bound, not a benchmark: it did not hang


def test_a_runaway_allocation_fails_at_the_memory_limit(
    attn: Attn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_PLUGIN_MEMORY_MB", "300")
    status, _, err = run(attn, "eat")
    assert status == 3
    assert err.strip().splitlines()[-1] == (
        f"{PLUGIN_FILE}:{line_of('hoard.append')}: variant 'misbehaving' ran out of memory: it "
        "needed more than the 300 MiB it may use (ATTN_PLUGIN_MEMORY_MB=MIB raises the limit)"
    )


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("kill", "variant 'misbehaving' stopped its worker process: it was killed by SIGKILL"),
        ("exit", "variant 'misbehaving' failed: called os._exit(0)"),
        ("sys-exit", "variant 'misbehaving' failed: called sys.exit(0)"),
    ],
)
def test_a_variant_ending_its_process_is_a_plugin_error(
    attn: Attn, action: str, message: str
) -> None:
    status, _, err = run(attn, action)
    assert status == 3
    assert message in err.strip().splitlines()[-1]
    assert "Traceback" not in err


def test_reading_stdin_gets_nothing_rather_than_waiting(attn: Attn) -> None:
    status, out, err = run(attn, "stdin")
    assert status == 0, err
    assert "== stage 2/2: weights" in out


def test_what_the_variant_prints_goes_to_stderr_and_is_cut_when_it_floods(attn: Attn) -> None:
    status, out, err = run(attn, "print")
    assert status == 0
    assert "first stage coming" in err and "x" * 100 not in out
    assert "x" * 64_000 in err and "x" * 64_001 not in err
    assert "(136,001 more characters printed by the variant)" in err


def test_check_json_stays_one_document_when_the_reference_variant_prints(
    attn: Attn, tmp_path: Path
) -> None:
    learner = tmp_path / "mine.py"
    learner.write_text(
        "import torch\n\ndef attention(inputs):\n"
        "    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs\n"
    )
    status, out, err = attn(
        "check", str(learner), "--against", "misbehaving", "--plugins-dir", str(HOSTILE), "--json"
    )
    assert status == 0, err
    assert json.loads(out)["matches"] is True
    assert "first stage coming" in err


def test_json_output_stays_one_document_when_the_variant_prints(attn: Attn) -> None:
    status, out, err = run(attn, "print", "--json")
    assert status == 0
    assert [stage["name"] for stage in json.loads(out)["stages"]] == ["inputs", "weights"]
    assert "first stage coming" in err


def test_torch_settings_changed_by_a_variant_stay_in_its_worker(attn: Attn) -> None:
    status, _, _ = run(attn, "dtype")
    assert status == 0
    assert torch.get_default_dtype() == torch.float32
    # The built-ins, run in this process afterwards, still see float32.
    trace = start_trace("trainable").run_to_end()
    assert trace.stage("weights").tensors["weights"].dtype == torch.float32


def test_esc_stops_a_long_step_and_stepping_on_runs_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATTN_TEST_SLOW_S", "1.5")
    host = PluginHost([HOSTILE], use_env=False)
    stepper = Stepper(
        lambda: start_trace("misbehaving", TraceOptions(options={"do": "slow"}), host)
    )
    assert isinstance(stepper.get(0), Stage)
    worker = stepper.trace
    assert isinstance(worker, WorkerTrace)
    child = worker._process
    started = time.monotonic()
    with pytest.raises(Cancelled):
        stepper.get(1, cancelled=lambda: time.monotonic() - started > 0.2)
    child.join(5)
    assert not child.is_alive()  # cancelling killed the child in the middle of its step
    step = stepper.get(1)  # a fresh run replays step 0 and computes step 1 in full
    assert isinstance(step, Stage) and step.name == "weights"
    assert stepper.stage_numbers == [0, 1]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "ATTN_STEP_TIMEOUT",
            "soon",
            "ATTN_STEP_TIMEOUT must be a number of seconds above 0 and at most 1,000,000,000, or inf for no limit, got 'soon'",
        ),
        (
            "ATTN_STEP_TIMEOUT",
            "0",
            "ATTN_STEP_TIMEOUT must be a number of seconds above 0 and at most 1,000,000,000, or inf for no limit, got '0'",
        ),
        (
            "ATTN_PLUGIN_MEMORY_MB",
            "10",
            "ATTN_PLUGIN_MEMORY_MB must be a whole number of MiB at least 64 and at most 1,099,511,627,776, or inf for no limit, got '10'",
        ),
        (
            "ATTN_PLUGIN_MEMORY_MB",
            "nan",
            "ATTN_PLUGIN_MEMORY_MB must be a whole number of MiB at least 64 and at most 1,099,511,627,776, or inf for no limit, got 'nan'",
        ),
        ("ATTN_ISOLATE", "never", "ATTN_ISOLATE='never' is not one of plugins, all, off"),
        (
            "ATTN_IMPORT_TIMEOUT",
            "soon",
            "ATTN_IMPORT_TIMEOUT must be a number of seconds above 0 and at most 1,000,000,000, or inf for no limit, got 'soon'",
        ),
        (
            "ATTN_IMPORT_TIMEOUT",
            "-1",
            "ATTN_IMPORT_TIMEOUT must be a number of seconds above 0 and at most 1,000,000,000, or inf for no limit, got '-1'",
        ),
    ],
)
def test_bad_limits_are_usage_errors(
    attn: Attn, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    status, _, err = run(attn, "nothing")
    assert status == 2
    assert err.strip() == f"attn: {message}"


def _steps(trace: Trace) -> tuple[list[Stage | SubStep], str]:
    """Every step, and the error that ended the run early (its class and line), if any."""
    steps: list[Stage | SubStep] = []
    try:
        for step in trace:
            steps.append(step)
    except TracerError as error:
        return steps, f"{type(error).__name__}: {error}"
    return steps, ""


def test_every_builtin_variant_steps_the_same_in_a_worker_as_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host = PluginHost(use_env=False)
    names = sorted(n for n, owner in host.owner.items() if owner.origin == ORIGIN_BUILTIN)
    assert len(names) >= 10
    refused = 0
    for name in names:
        options = TraceOptions(dropout=0.25)
        monkeypatch.setenv("ATTN_ISOLATE", "off")
        local = start_trace(name, options, host)
        monkeypatch.setenv("ATTN_ISOLATE", "all")
        remote = start_trace(name, options, host)
        assert isinstance(remote, WorkerTrace) and not isinstance(local, WorkerTrace)
        (expected, want_error), (found, got_error) = _steps(local), _steps(remote)
        assert got_error == want_error, name  # kv-cache refuses dropout: the same line, both ways
        assert len(found) == len(expected), name
        for want, got in zip(expected, found, strict=True):
            assert type(got) is type(want)
            assert (got.index, got.lines, got.files, got.axes) == (
                want.index,
                want.lines,
                want.files,
                want.axes,
            ), name
            assert list(got.tensors) == list(want.tensors)
            for key, tensor in want.tensors.items():
                assert torch.equal(got.tensors[key], tensor), (name, key)
        if not want_error:
            assert local.output is not None and remote.output is not None
            assert torch.equal(remote.output, local.output), name
        refused += bool(want_error)
    assert 0 < refused < len(names)


def test_a_plugin_that_never_finishes_loading_is_stopped_and_the_others_load(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTN_IMPORT_TIMEOUT", "0.5")
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "stuck.py").write_text("import time\nwhile True:\n    time.sleep(0.01)\n")
    (folder / "misbehaving.py").write_text(PLUGIN_FILE.read_text())
    status, out, err = attn("trace", "misbehaving", "--plugins-dir", str(folder))
    assert status == 0
    assert "== stage 2/2: weights" in out
    assert err.splitlines()[0] == (
        "attn: warning: plugin 'stuck' failed: took more than 0.5 s to load and was stopped; if it "
        "is only slow, raise the limit with ATTN_IMPORT_TIMEOUT=SECONDS "
        f"({folder / 'stuck.py'}:3) (see 'attn plugins')"
    )


def test_a_trace_the_reader_lets_go_of_takes_its_worker_with_it() -> None:
    # The stepper drops a trace whenever it replays; its child must not wait on forever.
    host = PluginHost([HOSTILE], use_env=False)
    children = []
    for _ in range(3):
        trace = start_trace("misbehaving", TraceOptions(), host)
        next(trace)
        assert isinstance(trace, WorkerTrace)
        children.append(trace._process)
        del trace
    gc.collect()
    for child in children:
        child.join(5)
        assert not child.is_alive()


def pipes_held(pid: int) -> set[str]:
    """The pipes process ``pid`` holds open, as ``pipe:[inode]``."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("pipe:"):
                held.add(target)
    return held


def test_a_worker_started_later_holds_none_of_an_earlier_workers_pipes() -> None:
    """Else the earlier worker's guard never reads its end of file when that run is closed."""
    host = PluginHost([HOSTILE], use_env=False)
    first = start_trace("misbehaving", TraceOptions(), host)
    second = start_trace("misbehaving", TraceOptions(), host)
    try:
        next(first)
        next(second)
        assert isinstance(first, WorkerTrace) and isinstance(second, WorkerTrace)
        first_pipes = {os.readlink(f"/proc/self/fd/{fd}") for fd in first._ends}
        later = [second._process.pid, *descendants(second._process.pid)]
        assert later[1:]  # the second guard and the worker below it
        for pid in later:
            assert not pipes_held(pid) & first_pipes, pid
    finally:
        first.close()
        second.close()
