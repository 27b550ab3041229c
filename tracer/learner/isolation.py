"""Running a learner's file in a sandbox process with a time and a memory limit.

The parent (``attn check``, ``attn exercises watch``) never runs the learner's
code: it writes the request to a temporary folder, starts
``python -m tracer.learner.sandbox`` with an argument list, waits for it under a
time limit that starts once torch has loaded, and reads the result back with
``torch.load(weights_only=True)``. The learner's stdout and stderr come back as
text (the first :data:`OUTPUT_LIMIT` characters) for the report's "your output".
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import tracer
from tracer.environment import env_number
from tracer.errors import Location, UsageError
from tracer.learner.loader import LearnerFailure

DEFAULT_TIMEOUT = 5.0
"""Seconds the learner's code may run (``--timeout``), counted once torch has loaded."""
DEFAULT_MEMORY_MB = 1024
"""Extra address space the learner's code may take (``--memory``), in MiB."""
STARTUP_LIMIT = 120.0
"""Seconds the sandbox may take to start (importing torch on a loaded machine is slow)."""
OUTPUT_LIMIT = 20_000
TIMEOUT_ENV = "ATTN_CHECK_TIMEOUT"
MEMORY_ENV = "ATTN_CHECK_MEMORY_MB"


@dataclass(frozen=True)
class Limits:
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB

    @classmethod
    def from_environment(cls, timeout: float | None = None, memory_mb: int | None = None) -> Limits:
        """Explicit values first, then ATTN_CHECK_TIMEOUT / ATTN_CHECK_MEMORY_MB, then defaults."""
        if timeout is None:
            timeout = env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT)
        if memory_mb is None:
            memory_mb = int(env_number(MEMORY_ENV, DEFAULT_MEMORY_MB))
        if not timeout > 0:
            raise UsageError(f"the time limit must be above 0 seconds, got {timeout:g}")
        if memory_mb < 64:
            raise UsageError(f"the memory limit must be at least 64 MiB, got {memory_mb}")
        return cls(float(timeout), int(memory_mb))


@dataclass
class Outcome:
    """What came back from the sandbox: the checked payload and what the learner printed."""

    payload: dict[str, Any]
    output: str


def _read_output(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(OUTPUT_LIMIT + 1)
            more = handle.seek(0, os.SEEK_END) > len(data)
    except OSError:
        return ""
    text = data[:OUTPUT_LIMIT].decode("utf-8", errors="replace")
    if more:
        text += "\n... (the rest of your output was cut)\n"
    return text


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


ARRIVED, CLOSED, LATE = "arrived", "closed", "late"


def _wait_for(fd: int, byte: bytes, deadline: float) -> str:
    """Whether ``byte`` arrives on the pipe before ``deadline``, the pipe closes, or time runs out."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return LATE
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return LATE
        data = os.read(fd, 1)
        if not data:
            return CLOSED
        if data == byte:
            return ARRIVED


def run_sandboxed(
    path: str, request: dict[str, Any], arguments: dict[str, torch.Tensor], limits: Limits
) -> Outcome:
    """Run the learner's file in a fresh process; raise LearnerFailure when it cannot finish."""
    with tempfile.TemporaryDirectory(prefix="attn-check-") as name:
        folder = Path(name)
        (folder / "request.json").write_text(
            json.dumps({**request, "path": path, "memory_mb": limits.memory_mb}), encoding="utf-8"
        )
        torch.save(arguments, folder / "arguments.pt")
        stdout, stderr = folder / "stdout.txt", folder / "stderr.txt"
        read_end, write_end = os.pipe()
        environment = dict(os.environ)
        package_root = str(Path(tracer.__file__).resolve().parent.parent)
        environment["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, environment.get("PYTHONPATH", "")) if p
        )
        environment["PYTHONIOENCODING"] = "utf-8"
        try:
            with stdout.open("wb") as out, stderr.open("wb") as err:
                process = subprocess.Popen(
                    # -P: a tracer.py in the current folder must not stand in for the tool
                    [
                        sys.executable,
                        "-P",
                        "-m",
                        "tracer.learner.sandbox",
                        str(folder),
                        str(write_end),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    pass_fds=(write_end,),
                    env=environment,
                    start_new_session=True,  # its own process group: killed as a whole
                )
        finally:
            os.close(write_end)
        try:
            started = _wait_for(read_end, b"r", time.monotonic() + STARTUP_LIMIT) == ARRIVED
            finished = started and _wait_for(read_end, b"d", time.monotonic() + limits.timeout)
            if finished == LATE:
                _kill(process)
                raise LearnerFailure(
                    f"{path}: your code did not finish within {limits.timeout:g} s (an endless "
                    "loop? waiting for input?); attn check stopped it (--timeout SECONDS to allow more)\n",
                    _read_output(stdout) + _read_output(stderr),
                )
            try:
                status = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _kill(process)
                status = -signal.SIGKILL
        finally:
            os.close(read_end)
            if process.poll() is None:
                _kill(process)
            # Whatever the learner's code started (a subprocess, say) ends with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        output = _read_output(stdout) + _read_output(stderr)
        result = folder / "result.pt"
        if not result.exists():
            raise LearnerFailure(_ended(path, status, started, limits, output), output)
        try:
            payload = torch.load(result, weights_only=True)
        except Exception as exc:
            raise LearnerFailure(
                f"{path}: attn check could not read what your code produced ({type(exc).__name__})\n",
                output,
            ) from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("status"), str):
        raise LearnerFailure(f"{path}: attn check could not read what your code produced\n", output)
    return _checked(path, payload, output, limits)


def _ended(path: str, status: int, started: bool, limits: Limits, output: str) -> str:
    if status < 0:
        signame = (
            signal.Signals(-status).name
            if -status in signal.Signals._value2member_map_
            else str(-status)
        )
        if -status == signal.SIGKILL:
            return (
                f"{path}: your code was killed (out of memory? the limit is {limits.memory_mb} MiB "
                "more than torch itself; --memory MB to change it)\n"
            )
        return f"{path}: your code was ended by signal {signame}\n"
    if not started:
        last = output.strip().splitlines()[-1:] or ["no message"]
        return f"{path}: the checker process could not start ({last[0]})\n"
    return (
        f"{path}: your code ended the process (status {status}) before returning, "
        "as os._exit does; return a tensor instead\n"
    )


def _checked(path: str, payload: dict[str, Any], output: str, limits: Limits) -> Outcome:
    status = payload["status"]
    if status == "ok":
        return Outcome(payload, output)
    if status == "usage":
        line = payload.get("line")
        raise UsageError(
            str(payload.get("message")), Location(path, line if isinstance(line, int) else None)
        )
    if status == "memory":
        raise LearnerFailure(
            f"{path}: your code ran out of memory (the limit is {limits.memory_mb} MiB more "
            "than torch itself; --memory MB to change it)\n",
            output,
        )
    if status == "ended":
        raise LearnerFailure(f"{path}: {payload.get('text')}\n", output)
    if status == "failed":
        return_text = str(payload.get("text"))
        raise LearnerFailure(return_text, output)
    raise LearnerFailure(
        f"{path}: attn check failed to run your code: {payload.get('text')}\n", output
    )
