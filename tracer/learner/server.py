"""The warm sandbox: one process that has imported torch forks a child per check.

``python -m tracer.learner.sandbox --serve FD PARENT`` runs :func:`serve`. The
parent (:class:`tracer.learner.isolation.SandboxServer`) sends each check over
the socket ``FD`` (a ``SOCK_SEQPACKET`` pair): a JSON request and three file
descriptors (the learner's stdout and stderr files, the status pipe). The
server forks, and the child runs :func:`tracer.learner.sandbox.run_check` in
its own session with stdin on ``/dev/null``. The server answers
``{"pid": N}`` at once and ``{"exit": STATUS, "memory": BOOL}`` when the child
has ended, after killing everything the child started.

Why a server and not a fresh interpreter per check: importing torch is most of
the time a check takes, and a forked child gets it for free. The server itself
never runs a torch operation (a process forked after torch's thread pools have
started can hang), and never runs the learner's code.

What the server does that a child cannot undo:
- it is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so processes the
  learner's code starts, even with ``setsid`` or a double fork, stay its
  descendants and are killed when the check ends;
- it watches the resident memory of the child's processes and kills them at
  the limit, which holds even where the learner's code raises its own
  ``RLIMIT_AS`` (as root it can);
- it dies with its parent (``PR_SET_PDEATHSIG``, and an end of file on the
  socket), killing its descendants first.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_SECONDS = 0.01
"""How often the memory of the child is looked at (its tree, every tenth time)."""
MESSAGE_SIZE = 1 << 20


class _Stop(BaseException):
    """The parent has gone: kill everything and end."""


def prctl(option: int, value: int) -> bool:
    """``prctl(2)`` through libc; False where it is not available (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(p) for p in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (orphans come back to a subreaper, so this is all of them)."""
    found: list[int] = []
    todo = _children(pid)
    while todo:
        child = todo.pop()
        if child in found:
            continue
        found.append(child)
        todo.extend(_children(child))
    return found


def resident(pid: int) -> int:
    """Resident memory of ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


_ended: dict[int, int] = {}
"""Wait statuses of children reaped while killing, by pid (the check's child among them)."""


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _ended[pid] = status


def _ended_status(pid: int) -> int | None:
    if pid in _ended:
        return _ended.pop(pid)
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return _ended.pop(pid, 0)
    return status if done else None


def kill_descendants(group: int | None = None, limit: float = 5.0) -> None:
    """SIGKILL every descendant until none is left (a forking loop included), reaping them.

    ``group``: the check's process group, killed first (all there is without ``/proc``).
    """
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    me = os.getpid()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        living = descendants(me)
        if not living:
            break
        for pid in living:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        if descendants(me):
            time.sleep(0.005)
    _reap()


def _start_child(request: dict[str, Any], fds: list[int], control: socket.socket) -> int:
    out_fd, err_fd, status_fd = fds
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    status = 70
    try:
        control.close()
        os.setsid()  # its own process group and session: killed as a whole
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server:
            os._exit(status)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in (null, out_fd, err_fd):
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        from tracer.learner.sandbox import run_check

        run_check(Path(request["folder"]), status_fd)
    except BaseException:
        with contextlib.suppress(BaseException):
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
    finally:
        os._exit(status)  # never back into the server's loop


def _run_one(control: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    baseline = resident(os.getpid())
    cap = baseline + int(request["memory_mb"]) * 1024 * 1024
    try:
        pid = _start_child(request, fds, control)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
    control.send(json.dumps({"pid": pid}).encode())
    memory = False
    killed = False
    ticks = 0
    while True:
        status = _ended_status(pid)
        if status is not None:
            break
        ready, _, _ = select.select([control], [], [], POLL_SECONDS)
        if ready:
            data = control.recv(MESSAGE_SIZE)
            if not data:
                raise _Stop
            if not killed and json.loads(data).get("kill"):
                killed = True
                kill_descendants(pid)
            continue
        ticks += 1
        used = resident(pid) - baseline
        if ticks % 10 == 0:
            used += sum(max(0, resident(p) - baseline) for p in descendants(pid))
        if not killed and used + baseline > cap:
            memory = killed = True
            kill_descendants(pid)
    kill_descendants(pid)  # whatever the learner's code started ends with it
    _ended.clear()
    code = os.waitstatus_to_exitcode(status)
    control.send(json.dumps({"exit": code, "memory": memory}).encode())


def serve(control_fd: int, parent: int) -> None:
    """Answer checks until the parent closes the socket or dies."""

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
    control = socket.socket(fileno=control_fd)
    import tracer.learner.sandbox  # noqa: F401  (torch and the checker, once)

    try:
        control.send(b'{"ready": true}')
        while True:
            data, fds, _, _ = socket.recv_fds(control, MESSAGE_SIZE, 3)
            if not data:
                break
            if len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            _run_one(control, json.loads(data), fds)
    except (_Stop, OSError):
        pass
    finally:
        kill_descendants()
        os._exit(0)
