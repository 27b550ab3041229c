"""Child processes that never outlive the process that started them (Linux).

Shared by the plugin worker, the plugin import child, ``attn serve``'s app sessions and
the learner sandbox: ``prctl`` through ctypes, the processes below a process (found
through ``/proc``), their memory, and killing every one of them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """``prctl(2)`` through libc; False where it is not available (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``signum`` to this process when its parent dies.

    Called in a child right after fork: even ``kill -9`` of the parent, which runs
    no clean-up of its own, then ends the child. Does nothing off Linux.
    """
    prctl(PR_SET_PDEATHSIG, signum)


def become_subreaper() -> bool:
    """Adopt this process's orphaned descendants (``setsid`` and double forks included),
    so that :func:`descendants` finds every one of them. False off Linux."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (none once it is gone)."""
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
    todo = children(pid)
    while todo:
        child = todo.pop()
        if child in found:
            continue
        found.append(child)
        todo.extend(children(child))
    return found


def resident(pid: int | str) -> int:
    """Resident memory of ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def private_memory(pid: int) -> int:
    """Memory only ``pid`` holds, in bytes: what ending it would free (0 once it is gone).

    Unlike :func:`resident`, pages a forked child still shares with its parent are not
    counted, so summing it over the processes of one tree counts each page once.
    """
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith(("Private_Clean:", "Private_Dirty:", "Swap:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return resident(pid)  # no smaps_rollup (before Linux 4.14): count it whole
    return total


reaped: dict[int, int] = {}
"""Wait statuses of children reaped by :func:`reap`, by pid."""


def reap() -> None:
    """Collect every child that has ended, keeping its status in :data:`reaped`."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reaped[pid] = status


def kill_descendants(group: int | None = None, limit: float = 5.0) -> None:
    """SIGKILL every descendant until none is left (a forking loop included), reaping them.

    ``group``: a process group killed first (all there is without ``/proc``). Meant for a
    subreaper, to which the orphans of what it kills come back.
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
        reap()
        if descendants(me):
            time.sleep(0.005)
    reap()


def occupy_standard_fds() -> frozenset[int]:
    """Open ``/dev/null`` on whichever of descriptors 0, 1 and 2 is closed; return those.

    A process started with a standard stream closed (``<&-``, ``2>&-``, as cron and some
    supervisors do) would otherwise hand that number to the next pipe or file it opens,
    and a worker that points 0, 1 and 2 at ``/dev/null`` would then cut its own pipe.
    """
    closed: set[int] = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        try:
            null = os.open(os.devnull, os.O_RDWR)
        except OSError:
            continue
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    return frozenset(closed)
