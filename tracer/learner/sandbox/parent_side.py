"""The parent's side of the sandbox: running a learner's file with a time and a memory limit.

The parent (``attn check``, ``attn exercises watch``) never runs the learner's code: it
writes the request to a temporary folder and hands it to the warm sandbox server
(:mod:`tracer.learner.sandbox.warm_server`, started once per session), which forks a child
that runs the file (:mod:`tracer.learner.sandbox.child`). The parent waits under a time
limit that starts once the child is ready, and reads the result back with
``torch.load(weights_only=True)``, decoded once (:mod:`tracer.learner.sandbox.payload`).
The learner's stdout and stderr come back as text (the first :data:`OUTPUT_LIMIT`
characters) for the report's "your output".
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tracer
from tracer.environment import MEBIBYTES, SECONDS, env_limit, parse_limit
from tracer.errors import Location, UsageError
from tracer.files import write_atomic
from tracer.learner.sandbox.source_loader import LearnerFailure, Unwritten
from tracer.learner.sandbox.warm_server import MESSAGE_SIZE

if TYPE_CHECKING:
    import torch

    from tracer.learner.sandbox.payload import Failed, Returned

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
        # One check for every limit (tracer.environment): inf lifts it, nan is refused.
        if timeout is None:
            timeout = env_limit(TIMEOUT_ENV, DEFAULT_TIMEOUT, SECONDS)
        else:
            timeout = parse_limit("the time limit", str(timeout), SECONDS)
        if memory_mb is None:
            memory_mb = int(env_limit(MEMORY_ENV, DEFAULT_MEMORY_MB, MEBIBYTES))
        else:
            memory_mb = int(parse_limit("the memory limit", str(memory_mb), MEBIBYTES))
        return cls(float(timeout), int(memory_mb))


@dataclass
class Outcome:
    """What came back from the sandbox: the decoded result and what the learner printed."""

    result: Returned
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


ARRIVED, CLOSED, LATE = "arrived", "closed", "late"


class ServerLost(Exception):
    """The sandbox server ended (or never started); ``text`` says what it last wrote."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class SandboxServer:
    """The parent's side of :mod:`tracer.learner.sandbox.warm_server`: a warm process that forks each check.

    Started once (``spawn``, early, so torch loads there while this process computes
    the reference) and reused by every check of the command or watch session.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._log: Any = None
        self._ready = False

    def spawn(self) -> None:
        """Start the server if it is not running; does not wait for it."""
        if self._process is not None and self._process.poll() is None:
            return
        self.close()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (kept open while the server lives)
        try:
            self._process = subprocess.Popen(
                # -P: a tracer.py in the current folder must not stand in for the tool
                [
                    sys.executable,
                    "-P",
                    "-m",
                    "tracer.learner.sandbox.warm_server",
                    str(theirs.fileno()),
                    str(os.getpid()),
                ],
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
                pass_fds=(theirs.fileno(),),
                env=_environment(),
                start_new_session=True,  # Ctrl-C in the terminal is the parent's to handle
            )
        finally:
            theirs.close()
        self._control = mine
        self._ready = False

    def _wait_ready(self) -> socket.socket:
        self.spawn()
        assert self._control is not None
        if not self._ready:
            ready, _, _ = select.select([self._control], [], [], STARTUP_LIMIT)
            data = self._control.recv(MESSAGE_SIZE) if ready else b""
            if not data:
                text = self._last_words()
                self.close()
                raise ServerLost(text)
            self._ready = True
        return self._control

    def _last_words(self) -> str:
        if self._log is None:
            return "no message"
        try:
            self._log.seek(0)
            lines = self._log.read().decode("utf-8", errors="replace").strip().splitlines()
        except OSError:
            return "no message"
        return lines[-1] if lines else "no message"

    def start(self, request: dict[str, Any], fds: tuple[int, int, int]) -> Running:
        """Fork a child for one check; ``fds`` are its stdout, stderr and status pipe."""
        try:
            control = self._wait_ready()
            socket.send_fds(control, [json.dumps(request).encode()], list(fds))
            ready, _, _ = select.select([control], [], [], 10)
            data = control.recv(MESSAGE_SIZE) if ready else b""
        except OSError as exc:
            self.close()
            raise ServerLost(str(exc)) from exc
        if not data:
            text = self._last_words()
            self.close()
            raise ServerLost(text)
        return Running(self, control, int(json.loads(data)["pid"]))

    def close(self) -> None:
        """End the server (it kills whatever is left of a check first)."""
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.close()
            self._control = None
        if self._process is not None:
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self._ready = False


class Running:
    """One check's child, as the server reports it."""

    def __init__(self, server: SandboxServer, control: socket.socket, pid: int) -> None:
        self.server = server
        self.control = control
        self.pid = pid
        self.status: int | None = None
        self.memory = False
        self.lost = False

    def fileno(self) -> int:
        return self.control.fileno()

    def wait(self, timeout: float) -> int:
        """The child's exit status (negative: the signal that ended it), as Popen gives it."""
        if self.status is not None:
            return self.status
        ready, _, _ = select.select([self.control], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired("sandbox", timeout)
        try:
            data = self.control.recv(MESSAGE_SIZE)
        except OSError:
            data = b""
        if not data:  # the server is gone (the learner's code may have killed it)
            self.lost = True
            self.server.close()
            self.status = -signal.SIGKILL
            return self.status
        message = json.loads(data)
        self.status = int(message["exit"])
        self.memory = bool(message.get("memory"))
        return self.status

    def kill(self) -> None:
        """Kill the child and everything it started; wait until the server says it is done."""
        if self.status is not None:
            return
        try:
            self.control.send(b'{"kill": true}')
            self.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.server.close()
            self.lost = True
            self.status = -signal.SIGKILL


_shared: SandboxServer | None = None


def shared_server() -> SandboxServer:
    """This process's sandbox server (one per ``attn check`` or watch session; reused)."""
    global _shared
    if _shared is None:
        _shared = SandboxServer()
        atexit.register(_shared.close)
    return _shared


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    package_root = str(Path(tracer.__file__).resolve().parent.parent)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, environment.get("PYTHONPATH", "")) if p
    )
    environment["PYTHONIOENCODING"] = "utf-8"
    return environment


def _wait_for(fd: int, byte: bytes, deadline: float, child: Running) -> str:
    """Whether ``byte`` arrives on the pipe before ``deadline``, the child ends, or time runs out."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return LATE
        ready, _, _ = select.select([fd, child.fileno()], [], [], left)
        if not ready:
            return LATE
        if fd not in ready:
            # The child ended: what it wrote before it ended is already in the pipe.
            ready, _, _ = select.select([fd], [], [], 0)
            if not ready:
                return CLOSED
        data = os.read(fd, 1)
        if not data:
            return CLOSED
        if data == byte:
            return ARRIVED


PROGRESS_NAME = ".attn-exercises.json"
"""The exercises' progress file (tracer.learner.exercises.workbook): the learner's code never marks
an exercise done."""


@contextlib.contextmanager
def _kept(path: Path) -> Iterator[None]:
    """Put back the progress file beside ``path`` if the learner's code changed it."""
    progress = path.absolute().parent / PROGRESS_NAME
    try:
        before: bytes | None = progress.read_bytes()
    except OSError:
        before = None
    try:
        yield
    finally:
        try:
            after: bytes | None = progress.read_bytes()
        except OSError:
            after = None
        if after != before:
            with contextlib.suppress(OSError):
                if before is None:
                    progress.unlink()
                else:
                    write_atomic(progress, before)


def run_sandboxed(
    path: str,
    request: dict[str, Any],
    arguments: dict[str, torch.Tensor],
    limits: Limits,
    server: SandboxServer | None = None,
) -> Outcome:
    """Run the learner's file in a child of the sandbox server; raise LearnerFailure when it
    cannot finish."""
    import torch  # here: the server can be spawned before this process pays for torch

    from tracer.learner.sandbox.payload import decode  # imports torch

    server = server or shared_server()
    with tempfile.TemporaryDirectory(prefix="attn-check-") as name, _kept(Path(path)):
        folder = Path(name)
        (folder / "request.json").write_text(
            json.dumps({**request, "path": path, "memory_mb": limits.memory_mb}), encoding="utf-8"
        )
        torch.save(arguments, folder / "arguments.pt")
        stdout, stderr = folder / "stdout.txt", folder / "stderr.txt"
        read_end, write_end = os.pipe()
        try:
            with stdout.open("wb") as out, stderr.open("wb") as err:
                child = server.start(
                    {
                        "folder": str(folder),
                        "cwd": os.getcwd(),
                        "env": _environment(),
                        "memory_mb": limits.memory_mb,
                    },
                    (out.fileno(), err.fileno(), write_end),
                )
        except ServerLost as lost:
            os.close(read_end)
            raise LearnerFailure(
                f"{path}: the checker process could not start ({lost.text})\n", ""
            ) from lost
        finally:
            os.close(write_end)
        try:
            started = _wait_for(read_end, b"r", time.monotonic() + STARTUP_LIMIT, child) == ARRIVED
            finished = started and _wait_for(
                read_end, b"d", time.monotonic() + limits.timeout, child
            )
            if finished == LATE:
                child.kill()
                raise LearnerFailure(
                    f"{path}: your code did not finish within {limits.timeout:g} s (an endless "
                    "loop? waiting for input?); attn check stopped it (--timeout SECONDS to allow more)\n",
                    _read_output(stdout) + _read_output(stderr),
                )
            try:
                status = child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                status = -signal.SIGKILL
        finally:
            os.close(read_end)
            child.kill()  # whatever the learner's code started ends with it
        output = _read_output(stdout) + _read_output(stderr)
        if child.memory:
            raise LearnerFailure(_out_of_memory(path, limits), output)
        if child.lost:
            raise LearnerFailure(
                f"{path}: your code ended attn check's sandbox process (did it kill its parent?)\n",
                output,
            )
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
    decoded = decode(payload)
    if decoded is None:
        raise LearnerFailure(f"{path}: attn check could not read what your code produced\n", output)
    return _checked(path, decoded, output, limits)


def _out_of_memory(path: str, limits: Limits) -> str:
    return (
        f"{path}: your code ran out of memory (the limit is {limits.memory_mb} MiB more "
        "than torch itself; --memory MB to change it)\n"
    )


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


def _checked(path: str, result: Returned | Failed, output: str, limits: Limits) -> Outcome:
    from tracer.learner.sandbox.payload import Returned  # imports torch (loaded by now)

    if isinstance(result, Returned):
        return Outcome(result, output)
    status = result.status
    if status == "usage":
        raise UsageError(result.text, Location(path, result.line))
    if status == "memory":
        raise LearnerFailure(_out_of_memory(path, limits), output)
    if status == "ended":
        raise LearnerFailure(f"{path}: {result.text}\n", output)
    if status == "unwritten":
        raise Unwritten(f"{result.text}\n", output)
    if status == "failed":
        raise LearnerFailure(result.text, output)
    raise LearnerFailure(f"{path}: attn check failed to run your code: {result.text}\n", output)
