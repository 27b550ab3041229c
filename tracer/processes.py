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


# Confining a process's writes to one folder (Linux Landlock) ---------------------------------

_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_WRITE_FILE, _TRUNCATE = 1 << 1, 1 << 14
_CHANGES = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
"""Landlock's first rights that change the file system: write, remove, make anything."""
_REFER = 1 << 13  # moving or linking a file between folders (Landlock ABI 2)


def confine_writes(*folders: str) -> bool:
    """From now on, this process and its children may change files under ``folders`` only
    (and write to ``/dev/null``); reading is unchanged. Returns False where the kernel
    cannot do it (not Linux, or Linux before 5.13 or without Landlock): the caller then
    keeps what a Python audit hook can do (:func:`refuse_writes_outside`).

    Already open descriptors (the output files, the status pipe) stay writable.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return False
    syscall.restype = ctypes.c_long
    abi = syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                  ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))  # fmt: skip
    if abi < 1:
        return False
    handled = _CHANGES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = ctypes.c_uint64(handled)  # struct landlock_ruleset_attr, first field (ABI 1 size)
    ruleset = syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.byref(attr),
                      ctypes.c_size_t(8), ctypes.c_uint32(0))  # fmt: skip
    if ruleset < 0:
        return False

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    try:
        rules = [(folder, handled) for folder in folders]
        rules.append((os.devnull, _WRITE_FILE | (handled & _TRUNCATE)))
        for path, rights in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = PathBeneath(rights, fd)
                added = syscall(ctypes.c_long(_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                                ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0))  # fmt: skip
            finally:
                os.close(fd)
            if added < 0:
                return False
        if not prctl(_PR_SET_NO_NEW_PRIVS, 1):
            return False
        done = syscall(ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset),
                       ctypes.c_uint32(0))  # fmt: skip
        return bool(done == 0)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.close(ruleset)


_WRITING_EVENTS = frozenset(
    {
        "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.link", "os.symlink",
        "os.truncate", "os.chmod", "os.chown", "os.utime", "shutil.rmtree", "shutil.move",
        "os.mkfifo", "os.mknod",
    }
)  # fmt: skip
_STARTING_EVENTS = frozenset(
    {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen", "ctypes.dlopen"}
)


def refuse_writes_outside(*folders: str) -> None:
    """A Python audit hook (it cannot be removed) refusing, from now on, to open a file for
    writing or to change a path outside ``folder``, and to start programs or load C
    libraries (which could write without Python seeing it). Where :func:`confine_writes`
    holds, the kernel already refuses; this still names the refusal in Python's words."""
    import sys

    inside = tuple(os.path.realpath(folder) + os.sep for folder in folders)

    def allowed(path: object) -> bool:
        if isinstance(path, int):
            return True  # an open descriptor: already allowed when it was opened
        try:
            text = os.fsdecode(path)  # type: ignore[arg-type]
        except TypeError:
            return False
        real = os.path.realpath(text)
        return real == os.devnull or (real + os.sep).startswith(inside)

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and args:
            mode, flags = (args[1], args[2]) if len(args) >= 3 else (None, 0)
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            )
            if writes and not allowed(args[0]):
                raise PermissionError(f"attn check does not let your code write {args[0]!r}")
        elif event in _WRITING_EVENTS and not all(
            allowed(a) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))
        ):
            raise PermissionError(f"attn check does not let your code change files ({event})")
        elif event in _STARTING_EVENTS:
            raise PermissionError(f"attn check does not let your code start programs ({event})")

    sys.addaudithook(hook)
