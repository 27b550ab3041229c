"""A learner's file runs in its own process: nothing it does fakes a pass, hangs or escapes.

Each hostile file ends with the documented exit status and one line naming
what happened (no traceback), and the reference is untouched. Expected values
come from numpy, which the learner's file cannot reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from tracer.inputs import load_inputs

Attn = Callable[..., tuple[int, str, str]]
HOSTILE = Path(__file__).parent / "hostile"


def one_line(err: str) -> str:
    """The tool's own message: one line, after what the learner's code printed, if anything."""
    assert "Traceback" not in err, err
    lines = [
        line
        for line in err.strip().splitlines()
        if line != "your output:" and not line.startswith("  | ")
    ]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("os_exit.py", "your code called os._exit(0)"),
        ("posix_exit.py", "your code ended the process (status 0) before returning"),
        ("sys_exit_at_import.py", "your code called sys.exit(0) while the file was loading"),
        ("generator_exit.py", "your code raised GeneratorExit"),
        ("keyboard_interrupt.py", "your code raised KeyboardInterrupt"),
        ("reads_stdin.py", "your code reads from standard input (input())"),
        ("huge_allocation.py", "your code ran out of memory (the limit is 1024 MiB"),
        ("huge_list.py", "your code ran out of memory (the limit is 1024 MiB"),
    ],
)
def test_escapes_are_one_line_and_status_2(attn: Attn, name: str, message: str) -> None:
    path = HOSTILE / name
    status, out, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2 and out == ""
    line = one_line(err)
    assert line.startswith(f"{path}: {message}"), line


@pytest.mark.parametrize("name", ["endless_loop.py", "sleeps.py"])
def test_code_that_never_returns_is_stopped(attn: Attn, name: str) -> None:
    path = HOSTILE / name
    status, out, err = attn("check", str(path), "--against", "vectorized", "--timeout", "1")
    assert status == 2 and out == ""
    assert one_line(err) == (
        f"{path}: your code did not finish within 1 s (an endless loop? waiting for input?); "
        "attn check stopped it (--timeout SECONDS to allow more)"
    )


def test_time_limit_from_the_environment(attn: Attn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTN_CHECK_TIMEOUT", "0.5")
    status, _, err = attn("check", str(HOSTILE / "sleeps.py"), "--against", "vectorized")
    assert status == 2 and "did not finish within 0.5 s" in err
    monkeypatch.setenv("ATTN_CHECK_TIMEOUT", "soon")
    status, _, err = attn("check", str(HOSTILE / "sleeps.py"), "--against", "vectorized")
    assert (status, err) == (
        2,
        "attn: ATTN_CHECK_TIMEOUT must be a number of seconds above 0 and at most 1,000,000,000, or inf for no limit, got 'soon'\n",
    )


def test_escape_in_json_mode_is_still_one_document(attn: Attn) -> None:
    status, out, err = attn(
        "check", str(HOSTILE / "os_exit.py"), "--against", "vectorized", "--json"
    )
    assert status == 2
    report = json.loads(out)
    assert report["error"] == err and "os._exit(0)" in err


def numpy_vectorized() -> np.ndarray:
    x = np.array(load_inputs("your-journey").embeddings, dtype=np.float64)
    scores = x @ x.T
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return weights @ x


def test_patching_torch_cannot_fake_a_pass(attn: Attn) -> None:
    """The file replaces torch.allclose, torch.equal and softmax: its zeros still differ."""
    status, out, _ = attn("check", str(HOSTILE / "patches_torch.py"), "--against", "vectorized")
    assert status == 1
    assert "Well done" not in out and "  | patched torch\n" in out
    # This process never ran the learner's file: its torch is the real one.
    assert torch.allclose(torch.zeros(1), torch.ones(1)) is False
    assert torch.get_default_dtype() == torch.float32


def test_the_reference_is_numpys_even_next_to_a_patched_torch(attn: Attn) -> None:
    status, out, _ = attn(
        "check", str(HOSTILE / "patches_torch.py"), "--against", "vectorized", "--json"
    )
    report = json.loads(out)
    # Zeros for weights give a zero context: the difference is the whole reference.
    assert report["max_difference"] == pytest.approx(
        float(np.abs(numpy_vectorized()).max()), rel=1e-5
    )
    assert status == 1


def test_prints_are_kept_apart_from_the_report(attn: Attn) -> None:
    path = HOSTILE / "prints.py"
    status, out, _ = attn("check", str(path), "--against", "vectorized", "--json")
    assert status == 0
    report = json.loads(out)  # one JSON document, whatever the file printed
    assert report["matches"] is True
    assert report["output"] == ("loading my attention\ncomputing (6, 3)\na warning of mine\n")
    status, out, _ = attn("check", str(path), "--against", "vectorized")
    assert status == 0
    assert "your output:\n  | loading my attention\n  | computing (6, 3)\n" in out


def test_a_flood_of_output_is_cut(attn: Attn) -> None:
    status, out, _ = attn(
        "check", str(HOSTILE / "prints_a_lot.py"), "--against", "vectorized", "--json"
    )
    assert status == 0
    report = json.loads(out)
    assert len(report["output"]) < 25_000
    assert report["output"].endswith("(the rest of your output was cut)\n")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("complex_result.py", "attention() returned a complex tensor (torch.complex64)"),
        ("meta_result.py", "attention() returned a meta tensor"),
        ("sparse_result.py", "attention() returned a sparse tensor"),
        ("nan_result.py", "attention() returned 18 NaN values out of 18"),
        ("integer_result.py", "attention() returned a torch.int64 tensor"),
    ],
)
def test_results_are_checked_not_trusted(attn: Attn, name: str, problem: str) -> None:
    status, out, err = attn("check", str(HOSTILE / name), "--against", "vectorized", "--json")
    assert status == 1, err
    report = json.loads(out)
    assert report["matches"] is False
    assert report["problem"].startswith(problem), report["problem"]


@pytest.mark.parametrize("name", ["float64_result.py", "parameter_result.py"])
def test_correct_values_in_another_dtype_or_subclass_pass(attn: Attn, name: str) -> None:
    status, out, err = attn("check", str(HOSTILE / name), "--against", "vectorized")
    assert status == 0, out + err


def test_inputs_whose_attention_overflows_are_refused_up_front(attn: Attn, tmp_path: Path) -> None:
    inputs = tmp_path / "huge.yaml"
    inputs.write_text("tokens: [a, b]\nembeddings:\n  - [1.0e30, 2.0]\n  - [3.0, 1.0]\n")
    status, out, err = attn(
        "check", str(HOSTILE / "nan_result.py"), "--against", "vectorized", "--inputs", str(inputs)
    )
    assert status == 2 and out == ""
    # Scores x·x grow as m² (d_in = 2): m = sqrt(max float32 / 100 / 2) is the safe bound.
    safe = (float(np.finfo(np.float32).max) / 100 / 2) ** 0.5
    assert err == (
        "attn: these inputs are too large: their attention scores overflow float32, "
        f"so there is nothing to compare with; keep every embedding value within ±{safe:.3g}\n"
    )


def test_a_tracer_module_in_the_current_folder_is_not_the_tool(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tracer.py").write_text("raise SystemExit('not the tool')\n")
    monkeypatch.chdir(tmp_path)
    status, out, err = attn("check", str(HOSTILE / "prints.py"), "--against", "vectorized")
    assert status == 0, out + err


def test_reading_stdin_as_a_file_is_one_line(attn: Attn) -> None:
    path = HOSTILE / "reads_stdin_file.py"
    status, out, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2 and out == ""
    assert one_line(err) == (
        f"{path}: your code reads from standard input (sys.stdin); "
        "attn check gives it nothing to read"
    )


def test_a_returned_tensor_subclass_that_raises_is_one_line(attn: Attn) -> None:
    path = HOSTILE / "raising_subclass.py"
    status, out, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2 and out == ""
    line = one_line(err)
    assert line.startswith(
        f"{path}: your code returned a Boom that raised RuntimeError when attn check read it"
    ), line


def test_a_byte_order_mark_is_not_a_syntax_error(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "with_bom.py"
    source = (HOSTILE / "prints.py").read_text(encoding="utf-8")
    path.write_bytes(b"\xef\xbb\xbf" + source.encode("utf-8"))
    status, out, err = attn("check", str(path), "--against", "vectorized")
    assert status == 0, out + err
    assert "Well done" in out


def test_a_memory_limit_lifted_by_the_learners_code_still_holds(attn: Attn) -> None:
    """As root one setrlimit call lifts RLIMIT_AS: the server kills the child at the limit."""
    path = HOSTILE / "lifts_memory_limit.py"
    status, out, err = attn("check", str(path), "--against", "vectorized", "--memory", "128")
    assert status == 2 and out == ""
    assert one_line(err).startswith(f"{path}: your code ran out of memory (the limit is 128 MiB")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_processes_the_learners_code_starts_end_with_the_check(attn: Attn, tmp_path: Path) -> None:
    """A new session and a double fork: the grandchild is no longer in the child's group."""
    pids = tmp_path / "pids"
    path = tmp_path / "forks.py"
    path.write_text(
        "import os, posix, time\n"
        "import torch\n\n\n"
        "def attention(inputs):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            with open({str(pids)!r}, 'a') as handle:\n"
        "                handle.write(f'{os.getpid()}\\n')\n"
        "            time.sleep(60)\n"
        "        posix._exit(0)\n"
        f"    while not os.path.exists({str(pids)!r}):\n"
        "        time.sleep(0.01)\n"
        "    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs\n"
    )
    try:
        status, out, err = attn("check", str(path), "--against", "vectorized")
        assert status == 0, out + err
        started = [int(p) for p in pids.read_text().split()]
        assert started
        assert not any(_alive(pid) for pid in started)
    finally:
        for pid in [int(p) for p in pids.read_text().split()] if pids.exists() else []:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_plugin_that_patches_torch_at_import_cannot_change_the_reference(
    attn: Attn, tmp_path: Path
) -> None:
    """Uniform weights are wrong; a plugin making softmax uniform must not make them pass."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "uniform.py").write_text(
        "import torch\n\n"
        "torch.softmax = lambda x, dim=-1, **kw: torch.full_like(x, 1.0 / x.shape[dim])\n"
    )
    learner = tmp_path / "uniform_weights.py"
    learner.write_text(
        "import torch\n\n\n"
        "def attention(inputs):\n"
        "    n = inputs.shape[0]\n"
        "    weights = torch.full((n, n), 1.0 / n)\n"
        "    return weights @ inputs\n"
    )
    softmax = torch.softmax
    try:
        status, out, _ = attn(
            "check", str(learner), "--against", "vectorized", "--plugins-dir", str(plugins)
        )
    finally:
        torch.softmax = softmax  # today's code would have patched this process too
    assert status == 1
    assert "Well done" not in out


def test_killing_attn_check_ends_the_learners_processes(tmp_path: Path) -> None:
    """``kill -9`` of attn check mid-check: its sandbox, the child and what that started end."""
    pids = tmp_path / "pids"
    path = tmp_path / "hangs.py"
    path.write_text(
        "import os, time\n\n\n"
        "def attention(inputs):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        with open({str(pids)!r}, 'a') as handle:\n"
        "            handle.write(f'{os.getpid()}\\n')\n"
        "        time.sleep(120)\n"
        f"    with open({str(pids)!r}, 'a') as handle:\n"
        "        handle.write(f'{os.getpid()}\\n')\n"
        "    time.sleep(120)\n"
    )
    command = [sys.executable, "-m", "tracer", "check", str(path), "--against", "vectorized"]
    # kill -9 leaves attn check no chance to remove its request folder: keep it in tmp_path.
    process = subprocess.Popen(
        [*command, "--timeout", "100"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    started: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(started) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
            started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
        assert len(started) == 2
        process.kill()
        process.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in started)
    finally:
        process.kill()
        for pid in started:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
