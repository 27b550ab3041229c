"""The warm sandbox: one process that has imported torch forks a child per check.

``python -m tracer.learner.sandbox.warm_server FD PARENT`` runs :func:`serve`. The
parent (:class:`tracer.learner.sandbox.parent_side.SandboxServer`) sends each check over
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
import json
import os
import select
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from tracer.processes import (
    MemoryWatch,
    become_subreaper,
    die_with_parent,
    kill_descendants,
    reaped,
    resident,
    start_child,
)

POLL_SECONDS = 0.01
"""How often the memory of the child is looked at (its tree, every tenth time), and its end."""
MESSAGE_SIZE = 1 << 20


class _Stop(BaseException):
    """The parent has gone: kill everything and end."""


def _check(request: dict[str, Any], fds: list[int], control: socket.socket) -> None:
    """The child of one check (in a session of its own, dying with the server): never returns."""
    out_fd, err_fd, status_fd = fds
    status = 70
    try:
        control.close()
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
        # Imported here, not at the top: the parent imports this module for MESSAGE_SIZE
        # and must not load torch; in the server it is already loaded (see serve).
        from tracer.learner.sandbox.child import run_check

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
        child = start_child(_check, request, fds, control, session=True)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
    control.send(json.dumps({"pid": child.pid}).encode())
    # The child and every process below it, from outside (it may lift its own RLIMIT_AS).
    watch = MemoryWatch(child.pid, cap, every=POLL_SECONDS)
    killed = False
    try:
        while True:
            status = child.poll()
            if status is not None:
                break
            ready, _, _ = select.select([control], [], [], POLL_SECONDS)
            if ready:
                data = control.recv(MESSAGE_SIZE)
                if not data:
                    raise _Stop
                if not killed and json.loads(data).get("kill"):
                    killed = True
                    kill_descendants(child.pid)
    finally:
        watch.stop(wait=True)  # no thread of ours when the next check forks
    kill_descendants(child.pid)  # whatever the learner's code started ends with it
    reaped.clear()
    code = os.waitstatus_to_exitcode(status)
    control.send(json.dumps({"exit": code, "memory": watch.exceeded}).encode())


def serve(control_fd: int, parent: int) -> None:
    """Answer checks until the parent closes the socket or dies."""

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    become_subreaper()
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
    control = socket.socket(fileno=control_fd)
    # Imported here, not at the top: the parent imports this module for MESSAGE_SIZE and
    # must not load torch. The server loads torch and the checker once, for every child.
    import tracer.learner.sandbox.child  # noqa: F401

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


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
