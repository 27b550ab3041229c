"""What a plugin's step starts ends with the run; its memory cap holds even if it lifts its
own rlimit (we may run as root)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests import forked

FORKS = """\
import os, time
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    with open(os.environ["ATTN_TEST_PIDS"], "w") as handle:
        handle.write(str(pid))
    yield stage("inputs", "Inputs", inputs=context.inputs)
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="forks", title="Forks", stages=("inputs",), run=run))
"""

LIFTS_LIMIT = """\
import resource
import torch
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    try:  # root with CAP_SYS_RESOURCE may lift even the hard limit
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except ValueError:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    hoard = []
    for _ in range(40):  # 40 x 64 MiB, each page touched
        hoard.append(torch.ones(2**24))
    yield stage("inputs", "Inputs", inputs=context.inputs)
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="lifts-limit", title="Lifts its limit", stages=("inputs",), run=run))
"""


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def attn(tmp_path: Path, name: str, source: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``attn trace NAME`` forked from this process (tests/forked.py), not a fresh interpreter.

    Equivalent here: the limits checked are the plugin worker's, which ``attn trace`` forks
    for the run whatever its parent imported; the variables set are read when the worker
    starts. The forked ``attn`` is its own session and nothing here kills its group after it
    ends, so a process a step leaves behind is found as it would be. The two tests that
    ``kill -9`` the tool fork it with ``forked.start_attn``: SIGKILL reaches the process
    running ``attn`` alone, as it reaches a real one.
    """
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{name.replace('-', '_')}.py").write_text(source)
    return forked.run_attn(
        "trace", name, "--plugins-dir", str(folder), timeout=120, env={**os.environ, **env}
    )


def attn_exiting(
    tmp_path: Path, name: str, source: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``attn trace NAME`` in a real interpreter, for the tests of what ends when ``attn``
    exits normally: a forked one skips the interpreter's exit (its atexit hooks belong to
    the test process), so the trace's own finalizer, which stops the worker, would not run
    and only the guard's end-of-pipe path would be tried."""
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{name.replace('-', '_')}.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "tracer", "trace", name, "--plugins-dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_a_process_forked_by_a_step_ends_with_the_trace(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = attn_exiting(tmp_path, "forks", FORKS, ATTN_TEST_PIDS=str(pids))
    assert result.returncode == 0, result.stderr
    child = int(pids.read_text())
    deadline = time.monotonic() + 10
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not running(child), "a process the plugin forked outlived attn trace"
    finally:
        if running(child):
            os.kill(child, 9)


def test_a_plugin_that_lifts_its_rlimit_is_still_stopped_at_the_memory_limit(
    tmp_path: Path,
) -> None:
    result = attn(tmp_path, "lifts-limit", LIFTS_LIMIT, ATTN_PLUGIN_MEMORY_MB="256")
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines()[-1].endswith(
        "variant 'lifts-limit' ran out of memory: it needed more than the 256 MiB it may use "
        "(ATTN_PLUGIN_MEMORY_MB=MIB raises the limit)"
    )


def test_the_memory_watch_kills_a_process_group_over_its_limit_from_outside() -> None:
    from tracer.processes import MemoryWatch, resident

    eater = subprocess.Popen(
        [sys.executable, "-c", "import time\nx = bytearray(400 * 2**20)\ntime.sleep(60)"],
        start_new_session=True,
    )
    try:
        watch = MemoryWatch(eater.pid, resident(eater.pid) + 64 * 2**20)
        assert eater.wait(30) == -9
        assert watch.exceeded
    finally:
        eater.kill()
        eater.wait(10)


FORKS_AND_WAITS = FORKS.replace(
    '    yield stage("inputs", "Inputs", inputs=context.inputs)',
    '    time.sleep(60)\n    yield stage("inputs", "Inputs", inputs=context.inputs)',
)


def test_a_process_forked_by_a_step_ends_when_attn_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "forks.py").write_text(FORKS_AND_WAITS)
    tool = forked.start_attn(
        "trace", "forks", "--plugins-dir", str(folder),
        env={**os.environ, "ATTN_TEST_PIDS": str(pids), "ATTN_STEP_TIMEOUT": "100"},
    )  # fmt: skip
    child = 0
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pids.read_text())
        assert running(child)
        tool.kill()  # kill -9: the tool runs no clean-up of its own
        tool.wait(10)
        deadline = time.monotonic() + 10
        while running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(child), "a process the plugin forked outlived kill -9 of attn trace"
    finally:
        tool.kill()
        tool.wait(10)
        if child and running(child):
            os.kill(child, 9)


LEAVES_THE_GROUP = """\
import os, posix, time
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a new session, then a second fork: out of the worker's group and tree
        os.setsid()
        if os.fork() == 0:
            os.write(write, str(os.getpid()).encode())
            time.sleep(60)
        posix._exit(0)  # the tracer turns os._exit from plugin code into an error
    os.close(write)
    os.waitpid(pid, 0)
    with open(os.environ["ATTN_TEST_PIDS"], "w") as handle:
        handle.write(os.read(read, 64).decode())
    time.sleep(float(os.environ.get("ATTN_TEST_WAIT", "0")))
    yield stage("inputs", "Inputs", inputs=context.inputs)
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="leaves", title="Leaves its group", stages=("inputs",), run=run))
"""


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def test_a_process_a_step_starts_in_a_new_session_ends_with_the_trace(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = attn_exiting(tmp_path, "leaves", LEAVES_THE_GROUP, ATTN_TEST_PIDS=str(pids))
    assert result.returncode == 0, result.stderr
    child = int(pids.read_text())
    try:
        assert _gone_within(child, 10), "a setsid, double-forked process outlived attn trace"
    finally:
        if running(child):
            os.kill(child, 9)


def test_a_process_a_step_starts_in_a_new_session_ends_when_attn_is_killed(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "leaves.py").write_text(LEAVES_THE_GROUP)
    env = {"ATTN_TEST_PIDS": str(pids), "ATTN_TEST_WAIT": "60", "ATTN_STEP_TIMEOUT": "100"}
    tool = forked.start_attn(
        "trace", "leaves", "--plugins-dir", str(folder), env={**os.environ, **env}
    )
    child = 0
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pids.read_text())
        assert running(child)
        tool.kill()  # kill -9: the tool runs no clean-up of its own
        tool.wait(10)
        assert _gone_within(child, 10), "a setsid process outlived kill -9 of attn trace"
    finally:
        tool.kill()
        tool.wait(10)
        if child and running(child):
            os.kill(child, 9)


CRAFTED_PICKLE = """\
import os
import tracer.tracing.worker as worker
from tracer import RunContext, Variant, hookimpl, stage


class Crafted:
    def __reduce__(self):  # unpickling it calls os.mkdir in whoever reads it
        return (os.mkdir, (os.environ["ATTN_TEST_MARKER"],))


def run(context: RunContext):
    worker._sendable = lambda step: Crafted()  # in the worker: what it sends next
    yield stage("inputs", "Inputs", inputs=context.inputs)
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="crafted", title="Crafted", stages=("inputs",), run=run))
"""


def test_a_crafted_pickle_from_a_worker_runs_nothing_in_the_tool(tmp_path: Path) -> None:
    marker = tmp_path / "ran-in-the-tool"
    result = attn(tmp_path, "crafted", CRAFTED_PICKLE, ATTN_TEST_MARKER=str(marker))
    assert not marker.exists(), "the tool unpickled a call the plugin chose"
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert "variant 'crafted' sent a message the tool refused" in last
    assert "mkdir" in last


def test_steps_of_every_kind_of_tensor_still_pass_the_restricted_unpickler() -> None:
    import pickle

    import torch

    from tracer.tracing.worker import _loads, _sendable
    from tracer.variant import Accumulate, stage, substep

    tensors = {
        "a": torch.arange(6.0).reshape(2, 3),
        "b": torch.ones(3, dtype=torch.bfloat16),  # torch's own pickling
        "c": torch.ones(3).expand(4, 3),  # an expanded view: torch's own pickling
        "d": torch.tensor([True, False]),
    }
    sent = [
        stage("s", "S", **tensors),
        substep(
            "s",
            (0,),
            before=torch.zeros(2),
            w=torch.ones(()),
            v=torch.ones(2),
            after=torch.ones(2),
            equation=Accumulate("before", "w", "v", "after"),
        ),
    ]
    for step in sent:
        buffers: list[pickle.PickleBuffer] = []
        data = pickle.dumps(("step", _sendable(step), [], ""), 5, buffer_callback=buffers.append)
        got = _loads(data, [bytearray(buffer.raw()) for buffer in buffers])[1]
        assert type(got) is type(step)
        for name, tensor in step.tensors.items():
            assert got.tensors[name].dtype == tensor.dtype
            assert torch.equal(got.tensors[name], tensor)


FORKS_THAT_EAT = """\
import os, time
from tracer import RunContext, Variant, hookimpl, stage


def run(context: RunContext):
    children = []
    for _ in range(3):  # each under its own inherited cap; together over the limit
        pid = os.fork()
        if pid == 0:
            hoard = bytearray(b"x") * (160 * 2**20)  # every page touched
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    with open(os.environ["ATTN_TEST_PIDS"], "w") as handle:
        handle.write(" ".join(map(str, children)))
    time.sleep(15)
    yield stage("inputs", "Inputs", inputs=context.inputs)
    return context.inputs


@hookimpl
def register_variants(register):
    register(Variant(name="forks-eat", title="Forks that eat", stages=("inputs",), run=run))
"""


def test_memory_of_processes_a_step_forked_counts_towards_the_limit(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = attn(
        tmp_path,
        "forks-eat",
        FORKS_THAT_EAT,
        ATTN_TEST_PIDS=str(pids),
        ATTN_PLUGIN_MEMORY_MB="256",
        ATTN_STEP_TIMEOUT="60",
    )
    children = [int(pid) for pid in pids.read_text().split()]
    try:
        assert result.returncode == 3, result.stderr
        assert result.stderr.splitlines()[-1].endswith(
            "variant 'forks-eat' ran out of memory: it needed more than the 256 MiB it may "
            "use (ATTN_PLUGIN_MEMORY_MB=MIB raises the limit)"
        )
        assert all(_gone_within(child, 10) for child in children)
    finally:
        for child in children:
            if running(child):
                os.kill(child, 9)
