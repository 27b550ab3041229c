"""Process isolation: child processes that run code we did not write and never outlive
the process that started them (Linux).

The one place for what the plugin worker (:mod:`tracer.tracing.worker`), the plugin
host's trial import (:mod:`tracer.plugin_host.host`), ``attn serve``'s app sessions and
the learner's sandbox (:mod:`tracer.learner.sandbox`) each need:

- starting a forked child in its own process group (or session) that dies with its
  parent (:func:`start_child`, :class:`Child`), without Python's warning about forking
  a threaded process (:func:`quiet_fork_warning`);
- its memory: ``/proc/PID/statm`` (:func:`resident`, :func:`address_space`), a cap on its
  address space (:func:`cap_address_space`) and a watch from outside that kills a tree
  of processes over its limit (:class:`MemoryWatch`);
- its time limit: asking a stuck child where it is (:func:`ask_where`, within
  :data:`WHERE_GRACE_S`), then killing its group (:meth:`Child.kill_group`);
- a message channel (:class:`Channel`): pickled messages whose tensors travel as raw
  buffers, read back by an unpickler that builds only the classes its caller allows;
- ``prctl`` through ctypes, the processes below a process (found through ``/proc``),
  killing every one of them, and confining a process's writes to one folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

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


def address_space(pid: int | str = "self") -> int | None:
    """Address space of ``pid`` in bytes (None when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def cap_address_space(megabytes: int) -> None:
    """Cap this process's address space at what it has now plus ``megabytes``.

    Hard as well as soft: without privileges the code that runs next cannot raise it
    again (as root it can, so callers also watch the memory from outside, see
    :class:`MemoryWatch`). Where there is no ``/proc`` or no ``RLIMIT_AS``, or the system
    refuses to lower it, nothing changes: the time limit still holds.
    """
    try:
        import resource
    except ImportError:
        return
    used = address_space()
    if used is None:
        return
    limit = used + megabytes * 2**20
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        return


MEMORY_LOOK_S = 0.05
"""How often a :class:`MemoryWatch` measures by default."""
TREE_EVERY = 10
"""The other processes of a tree are measured every tenth look (reading what a process holds
privately costs milliseconds; one process's resident memory costs microseconds)."""


class MemoryWatch:
    """Kills a process and everything below it when their memory passes ``limit`` bytes.

    An address-space rlimit set in the process is a first line only: as root its code can
    raise even the hard limit with one ``setrlimit`` call, and every process it forks gets
    a limit of its own. This limit is enforced from outside, by the parent, where none of
    that code runs, on the memory of the whole tree: ``pid`` counts whole (the parent's own
    memory is the baseline of ``limit``); every other process below ``root`` counts only
    the memory it does not share (a forked process starts sharing all of it).
    """

    def __init__(
        self, pid: int, limit: int, root: int | None = None, every: float = MEMORY_LOOK_S
    ) -> None:
        self.pid, self.limit, self.every = pid, limit, every
        self.root = pid if root is None else root
        self._others = 0
        self._looks = 0
        self.exceeded = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attn-memory-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self.every):
            used = resident(self.pid)
            if used == 0:
                return  # gone
            if self._looks % TREE_EVERY == 0:
                others = [p for p in descendants(self.root) if p != self.pid]
                self._others = sum(private_memory(p) for p in others)
            self._looks += 1
            if used + self._others > self.limit:
                self.exceeded = True
                # Below the root first: the root then ends as well.
                for pid in descendants(self.root):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.killpg(self.root, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)
                return

    def stop(self, wait: bool = False) -> None:
        """Stop watching; with ``wait``, until the watch's thread has ended (before a fork)."""
        self._done.set()
        if wait:
            self._thread.join()


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


# Starting a child ----------------------------------------------------------------------


@contextlib.contextmanager
def quiet_fork_warning() -> Iterator[None]:
    """Python 3.12+ warns about fork in a threaded process; the child runs no thread's code."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
        yield


def flush_standard_streams() -> None:
    """Flush our buffers before a fork: what sits in them would be printed twice, once by
    each process."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def null_standard_fds() -> None:
    """Point descriptors 0, 1 and 2 at ``/dev/null``, and ``sys.stdin`` at a fresh stream on
    it: C-level writes of a child must not draw over the tool's screen or into its output,
    and a read gets nothing rather than the tool's input (or whatever a test runner put in
    its place)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        if devnull > 2:
            os.close(devnull)
    with contextlib.suppress(OSError):
        sys.stdin = open(os.devnull)  # noqa: SIM115 (the child's standard input from now on)


class Child:
    """A forked child process (:func:`start_child`): its status, its end, its group.

    Safe to use from several threads; its status is collected once and kept, also when
    :func:`reap` collected it first.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._status: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        """The wait status once the child has ended (reaping it), else None."""
        with self._lock:
            if self._status is None:
                try:
                    done, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped elsewhere: by reap(), or never ours
                    done, status = self.pid, reaped.pop(self.pid, 0)
                if done:
                    self._status = status
            return self._status

    def is_alive(self) -> bool:
        return self.poll() is None

    def join(self, timeout: float | None = None) -> None:
        """Wait until the child has ended, or ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(0.005)

    @property
    def exitcode(self) -> int | None:
        """Its exit status, or minus the signal that ended it (None while it runs)."""
        status = self.poll()
        return None if status is None else os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)

    def kill_group(self) -> None:
        """SIGKILL the child's process group: whatever it started there goes too."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)


def start_child(
    target: Callable[..., object],
    *args: Any,
    session: bool = False,
    die_signal: int = signal.SIGKILL,
) -> Child:
    """Fork a child that runs ``target(*args)`` and then ends (it never returns here).

    The child gets a process group of its own (a session of its own with ``session``),
    killed as one and out of reach of the terminal's Ctrl+C, and dies with its parent
    (``die_signal``; :func:`die_with_parent`). A target that raises ends the child with
    status 1 and its traceback on standard error; ``SystemExit`` ends it with its status.
    Raises OSError when the system cannot fork (out of processes or memory).
    """
    flush_standard_streams()
    parent = os.getpid()
    with quiet_fork_warning():
        pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            with contextlib.suppress(OSError):
                if session:
                    os.setsid()
                else:
                    os.setpgid(0, 0)
            # The parent's own handlers (the app's: save progress and close) mean nothing
            # here: a stop request ends the child as the system would.
            for signum in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            die_with_parent(die_signal)
            if os.getppid() != parent:  # the parent died before the line above
                os._exit(status)
            target(*args)
            status = 0
        except SystemExit as exc:
            code = exc.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
        except BaseException:
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            flush_standard_streams()
            os._exit(status)
    if not session:
        with contextlib.suppress(OSError):  # also set in the child: whichever runs first
            os.setpgid(pid, pid)
    return Child(pid)


WHERE_GRACE_S = 0.5
"""How long a stuck child gets to say which line it is on before it is killed."""


def ask_where(pid: int) -> None:
    """Ask a stuck child which line it is on (SIGUSR1: the child's handler answers on its
    channel); a child that is gone says nothing."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGUSR1)


# Messages between a parent and its child ------------------------------------------------
# A message is three parts: the sizes of its out-of-band buffers, the pickle, the buffers.
# Tensors travel as numpy arrays whose values are sent as raw buffers (pickle protocol 5):
# torch's own pickling copies a 16 MB score matrix through a zip archive, ten times slower.


class Refused(Exception):
    """A child sent something that is not part of the protocol (never run, never built)."""


class Channel:
    """Two one-way pipes used as one connection (a pipe moves big messages faster than a
    socket), carrying framed pickled messages."""

    def __init__(self, reader: Connection, writer: Connection) -> None:
        self.reader, self.writer = reader, writer
        self.poll = reader.poll
        self.recv_bytes = reader.recv_bytes
        self.recv_bytes_into = reader.recv_bytes_into
        self.send_bytes = writer.send_bytes

    def fds(self) -> tuple[int, int]:
        return self.reader.fileno(), self.writer.fileno()

    def close(self) -> None:
        self.reader.close()
        self.writer.close()

    def send(self, message: object) -> None:
        """Send one message (raises what pickling it raises)."""
        buffers: list[pickle.PickleBuffer] = []
        data = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
        views = [buffer.raw() for buffer in buffers]
        # The parent's "where are you stuck?" signal must not land between the parts.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        try:
            self.send_bytes(pickle.dumps([view.nbytes for view in views]))
            self.send_bytes(data)
            for view in views:
                self.send_bytes(view)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def receive(self, unpickler: type[pickle.Unpickler]) -> Any:
        """The next message, built by ``unpickler`` (whose ``find_class`` decides what may be
        built); :class:`Refused` for anything that is not a well-framed message."""
        from multiprocessing import BufferTooShort  # loaded with the pipes (channel_pair)

        sizes = loads(self.recv_bytes(), (), unpickler)
        if not (isinstance(sizes, list) and all(type(size) is int and size >= 0 for size in sizes)):
            raise Refused("unreadable message (buffer sizes)")
        data = self.recv_bytes()
        buffers = []
        for size in sizes:
            buffer = bytearray(size)  # writable, so the tensors built on it are ordinary tensors
            try:
                if size:
                    self.recv_bytes_into(buffer)
                else:
                    self.recv_bytes()
            except BufferTooShort:  # two writers (a child that forked), interleaved
                raise Refused("a message that does not fit its announced size") from None
            buffers.append(buffer)
        return loads(data, buffers, unpickler)


def loads(data: bytes, buffers: Sequence[Any], unpickler: type[pickle.Unpickler]) -> Any:
    """Unpickle ``data`` with ``unpickler``; :class:`Refused` when it cannot be read."""
    try:
        return unpickler(io.BytesIO(data), buffers=buffers).load()
    except Refused:
        raise
    except Exception as exc:  # truncated or malformed bytes
        raise Refused(f"unreadable message ({type(exc).__name__})") from None


def channel_pair() -> tuple[Channel, Channel]:
    """(the parent's end, the child's end) of a new channel, to be forked with the child."""
    import multiprocessing  # tens of milliseconds: only once a child is started

    requests_read, requests_write = multiprocessing.Pipe(duplex=False)
    messages_read, messages_write = multiprocessing.Pipe(duplex=False)
    with contextlib.suppress(Exception):  # Linux: a 1 MiB pipe, sixteen times the default
        import fcntl

        fcntl.fcntl(messages_write.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 2**20)
    return Channel(messages_read, requests_write), Channel(requests_read, messages_write)


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
