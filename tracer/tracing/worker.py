"""Running a plugin's variant in a worker process, with a time and a memory limit.

A variant from a third-party plugin is code we did not write: it may loop
forever, sleep, allocate without bound, crash the interpreter or change
torch's global state. :class:`WorkerTrace` is a :class:`~tracer.tracing.Trace`
whose steps are computed in a child process forked for this one run:

* each step must arrive within the step time limit, or the child is killed
  and the trace fails with one line naming the limit (and, when the child can
  still say where it was, the plugin's line);
* the child's address space is capped, so a runaway allocation fails there;
* whatever the child does to torch, ``os``, ``sys`` or its own memory stays
  in the child; the reader (the app, ``attn trace``, a lesson) only receives
  finished steps;
* a caller waiting for a step can give up (``should_stop``), which kills the
  child: that is how Esc stops a long step in the app;
* what the variant prints comes back with its step and the parent writes it
  to its standard error (standard output may be a JSON document being
  written; inside the app, Textual keeps it off the screen).

The child is forked, so it starts with the parent's plugins and torch already
imported (milliseconds, not a second torch import). It runs the ordinary
:class:`Trace`, so every check and every recorded line is the same as in
process. Forking is safe on Linux only; elsewhere variants run in process.

Built-in variants are ours and run in process by default (they are the
reference a learner is checked against, and tracing them must stay cheap);
``ATTN_ISOLATE`` changes that: ``plugins`` (default), ``all`` or ``off``
(``off`` lets an author step through a plugin with a debugger).
"""

from __future__ import annotations

import contextlib
import copy
import io
import multiprocessing
import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracer.environment import MEBIBYTES, SECONDS, env_limit
from tracer.equations import STAGE_EQUATIONS, Accumulate, Dot
from tracer.errors import InputError, Location, PluginError, TracerError, UsageError
from tracer.processes import (
    PR_SET_PDEATHSIG,
    become_subreaper,
    children,
    descendants,
    die_with_parent,
    kill_descendants,
    occupy_standard_fds,
    prctl,
    private_memory,
    reap,
    reaped,
    resident,
)
from tracer.sanitize import drop_warnings, keep_warnings, take_warnings, visible
from tracer.tracing.stepper import Cancelled
from tracer.tracing.trace import Trace, VariantRunError
from tracer.variant import RunContext, Stage, Step, SubStep, Variant

if sys.platform != "win32":  # the worker forks: POSIX only (used where a step runs in it)
    import fcntl
    import resource

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    import torch

ISOLATE_ENV = "ATTN_ISOLATE"
TIMEOUT_ENV = "ATTN_STEP_TIMEOUT"
MEMORY_ENV = "ATTN_PLUGIN_MEMORY_MB"
ISOLATE_CHOICES = ("plugins", "all", "off")
DEFAULT_STEP_TIMEOUT = 10.0
"""Seconds one step of a plugin's variant may take."""
DEFAULT_MEMORY_MB = 4096
"""Address space a plugin's variant may add to what the worker starts with, in MiB."""
OUTPUT_LIMIT = 64_000
"""Characters of a variant's printing passed on per step; the rest is summarised."""
POLL_S = 0.05
WHERE_GRACE_S = 0.5
"""How long a stuck child gets to say which line it is on before it is killed."""

_REAL_EXIT = os._exit
_NUMPY_DTYPES: set[Any] = set()
"""torch dtypes that numpy shares, filled in by the child (this module must not import torch)."""

_ERRORS: dict[str, type[TracerError]] = {
    cls.__name__: cls for cls in (TracerError, UsageError, InputError, PluginError, VariantRunError)
}


@dataclass(frozen=True)
class WorkerLimits:
    """How long one step may take and how much memory the variant may add."""

    step_timeout: float = DEFAULT_STEP_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB

    @classmethod
    def from_environment(cls) -> WorkerLimits:
        timeout = env_limit(TIMEOUT_ENV, DEFAULT_STEP_TIMEOUT, SECONDS)
        memory = env_limit(MEMORY_ENV, DEFAULT_MEMORY_MB, MEBIBYTES)
        return cls(float(timeout), int(memory))


def isolation_mode() -> str:
    """``plugins``, ``all`` or ``off``, from ``ATTN_ISOLATE``; always ``off`` off Linux."""
    text = os.environ.get(ISOLATE_ENV, "").strip().lower() or "plugins"
    if text not in ISOLATE_CHOICES:
        raise UsageError(f"{ISOLATE_ENV}={text!r} is not one of {', '.join(ISOLATE_CHOICES)}")
    if not sys.platform.startswith("linux"):
        return "off"  # fork is missing on Windows and unsafe with macOS's system libraries
    return text


def should_isolate(builtin: bool) -> bool:
    mode = isolation_mode()
    return mode == "all" or (mode == "plugins" and not builtin)


@dataclass(frozen=True)
class _Run:
    """What the child needs to run the variant (never the WorkerTrace itself: the process
    object would keep it alive, and with it the child, after the reader lets it go)."""

    variant: Variant
    context: RunContext
    plugin: str
    roots: tuple[str, ...]
    limits: WorkerLimits
    source_file: str
    guard: tuple[int, int] = (-1, -1)
    """The pipe whose end of file tells the worker's group guard that the tool is gone."""


class WorkerTrace(Trace):
    """A :class:`Trace` whose variant runs in a forked child, one step per request."""

    def __init__(
        self,
        variant: Variant,
        context: RunContext,
        plugin: str = "",
        roots: Sequence[str] = (),
        limits: WorkerLimits | None = None,
    ) -> None:
        super().__init__(variant, context, plugin, roots)
        self.limits = limits or WorkerLimits.from_environment()
        self._roots = tuple(roots)
        self._connection: Connection | None = None
        self._process: Any = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._watch: _MemoryWatch | None = None
        self._ends: tuple[int, ...] = ()
        """The tool's ends of the worker's pipes (its guard's and its two)."""

    def __next__(self) -> Step:
        if self.finished:
            raise StopIteration
        try:
            if self._connection is None:
                self._spawn()
            assert self._connection is not None
            try:
                self._connection.send_bytes(b"next")
            except OSError:  # the child is gone already
                raise self._died(self._process) from None
            message = self._receive()
        except BaseException:
            self.finished = True
            self.close()
            raise
        kind = message[0]
        if kind == "step":
            _, step, changes, printed = message
            self._print(printed)
            self.torch_changes.extend(changes)
            try:
                # Checked again here: the plugin may have switched the checks off in its worker.
                return self._accept(self._checked(step))
            except BaseException:
                self.finished = True
                self.close()
                raise
        self.finished = True
        self.close()
        if kind == "end":
            _, output, changes, printed, read_padding = message
            self._print(printed)
            self.torch_changes.extend(changes)
            self.output = self._checked_output(output)
            # The variant read its own copy of the context, in the worker: the worker says.
            self.read_padding = read_padding
            self._warn_unused_padding()
            raise StopIteration
        if kind != "error":
            raise self._error(f"sent a message the tool refused: a '{visible(kind)}' message")
        _, name, text, location, changes, printed = message
        self._print(printed)
        self.torch_changes.extend(changes)
        raise _ERRORS.get(name, PluginError)(text, Location(*location) if location else None)

    def close(self) -> None:
        """Stop the child (if any); the trace cannot go on."""
        self.finished = True
        if self._finalizer is not None:
            self._finalizer()
        self._connection = None
        self._process = None

    # Parent side -----------------------------------------------------------------

    def _spawn(self) -> None:
        # A closed standard stream's number would go to one of the pipes below, which the
        # child then points at /dev/null (used as a library, not through ``attn``).
        occupy_standard_fds()
        # Whatever sits in our buffers would be printed twice, once by each process.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        context = multiprocessing.get_context("fork")
        parent_end, child_end = _pipes(context)
        guard_read, guard_write = os.pipe()
        run = _Run(
            self.variant,
            self.context,
            self.plugin,
            self._roots,
            self.limits,
            self.source_file,
            (guard_read, guard_write),
        )
        process = context.Process(
            target=_serve,
            args=(run, child_end, parent_end),
            name=f"attn-variant-{self.variant.name}",
            daemon=True,
        )
        try:
            with _quiet_fork_warning():
                process.start()
        except OSError as error:  # out of processes or memory
            parent_end.close()
            child_end.close()
            os.close(guard_read)
            os.close(guard_write)
            raise PluginError(
                f"could not start a worker process for variant '{self.variant.name}': {error}"
            ) from None
        child_end.close()
        os.close(guard_read)
        pid = process.pid
        assert pid is not None
        with contextlib.suppress(OSError):  # also set in the child: whichever runs first
            os.setpgid(pid, pid)
        self._connection, self._process = parent_end, process
        ends = (guard_write, *_fds(parent_end))
        _TOOL_ENDS.update(ends)  # a worker forked after this one closes them (see _TOOL_ENDS)
        self._ends = ends
        worker = _worker_of(pid, process)
        self._watch = _MemoryWatch(worker, _rss() + self.limits.memory_mb * 2**20, root=pid)
        self._finalizer = weakref.finalize(
            self, _stop, process, parent_end, self._watch, guard_write, ends
        )

    def _receive(self) -> tuple[Any, ...]:
        """The child's answer to ``next``, within the step time limit."""
        connection, process = self._connection, self._process
        assert connection is not None and process is not None
        deadline = time.monotonic() + self.limits.step_timeout
        while True:
            try:
                if connection.poll(POLL_S):
                    return _read(connection)
            except (EOFError, OSError):
                raise self._died(process) from None
            except _Refused as refused:
                what = visible(str(refused), multiline=False)
                raise self._error(
                    f"sent a message the tool refused: {what} is not part of a step"
                ) from None
            if not process.is_alive() and not connection.poll(0):
                raise self._died(process)
            should_stop = self.should_stop
            if should_stop is not None and should_stop():
                raise Cancelled()
            if time.monotonic() > deadline:
                raise self._timed_out(connection, process)

    def _timed_out(self, connection: Connection, process: Any) -> VariantRunError:
        """Ask the child where it is stuck (its plugin's line), then give up on it."""
        where = Location(self.source_file)
        with contextlib.suppress(OSError, EOFError, _Refused):  # a child gone says nothing
            os.kill(process.pid, signal.SIGUSR1)
            if connection.poll(WHERE_GRACE_S):
                message = _read(connection)
                if message[0] == "where" and message[1]:
                    where = Location(*message[1])
        limit = self.limits.step_timeout
        return VariantRunError(
            f"variant '{self.variant.name}' took more than {limit:g} s on one step and was "
            f"stopped; if it is only slow, raise the limit with {TIMEOUT_ENV}=SECONDS",
            where,
        )

    def _died(self, process: Any) -> VariantRunError:
        process.join(1.0)
        if self._watch is not None and self._watch.exceeded:
            limit = self.limits.memory_mb
            return VariantRunError(
                f"variant '{self.variant.name}' ran out of memory: it needed more than the "
                f"{limit:,} MiB it may use ({MEMORY_ENV}=MIB raises the limit)",
                Location(self.source_file),
            )
        code = process.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            how = f"was killed by {name}"
        else:
            how = f"ended with exit status {code}"
        return VariantRunError(
            f"variant '{self.variant.name}' stopped its worker process: it {how} "
            "while computing a step",
            Location(self.source_file),
        )

    def _checked(self, step: object) -> Step:
        """The step as the renderers may trust it, or the plugin's error (never a crash here)."""
        from tracer.tracing.checks import check_step  # imports torch: not before a step arrives

        where = Location(self.source_file)
        if not isinstance(step, (Stage, SubStep)):
            raise self._error(f"yielded {type(step).__name__}; expected stage(...) or substep(...)")
        try:
            check_step(self, step, where)
            files = step.files
            if not (
                isinstance(step.source_file, str)
                and isinstance(files, dict)
                and all(
                    isinstance(path, str) and all(isinstance(n, int) for n in lines)
                    for path, lines in files.items()
                )
            ):
                raise self._error("sent a step whose source lines are not file names and numbers")
        except TracerError:
            raise
        except Exception as exc:  # a step built to break the checks themselves
            raise self._error(f"sent a step the tool cannot read ({type(exc).__name__})") from None
        return step

    def _checked_output(self, output: object) -> Any:
        import torch  # torch loads in the background while the first frame paints

        from tracer.tracing.checks import _tensor  # imports torch

        if not isinstance(output, torch.Tensor):
            raise self._error(f"returned {type(output).__name__}; it must return the output tensor")
        return _tensor(self, "its output", "output", output, Location(self.source_file))

    def _accept(self, step: Step) -> Step:
        """Keep the step's bookkeeping as the child's trace did."""
        if isinstance(step, Stage):
            self.stages.append(step)
            self.substeps_in_current_loop = 0
        else:
            self.substeps_in_current_loop += 1
        return step

    @staticmethod
    def _print(printed: str) -> None:
        # Standard error: standard output may be a document (--json, an export) being written.
        if printed:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            sys.stderr.write(visible(printed))
            sys.stderr.flush()


class _Duplex:
    """Two one-way pipes used as one connection: a pipe moves big steps faster than a socket."""

    def __init__(self, reader: Connection, writer: Connection) -> None:
        self.reader, self.writer = reader, writer
        self.poll = reader.poll
        self.recv_bytes = reader.recv_bytes
        self.recv_bytes_into = reader.recv_bytes_into
        self.send_bytes = writer.send_bytes

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def _fds(connection: Any) -> tuple[int, int]:
    """The two file descriptors of a :class:`_Duplex`."""
    return connection.reader.fileno(), connection.writer.fileno()


def _pipes(context: Any) -> tuple[Connection, Connection]:
    """(parent's end, child's end)."""
    requests_read, requests_write = context.Pipe(duplex=False)
    steps_read, steps_write = context.Pipe(duplex=False)
    with contextlib.suppress(Exception):  # Linux: a 1 MiB pipe, sixteen times the default
        fcntl.fcntl(steps_write.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 2**20)
    parent: Any = _Duplex(steps_read, requests_write)
    child: Any = _Duplex(requests_read, steps_write)
    return parent, child


_TOOL_ENDS: set[int] = set()
"""The tool's ends of every running worker's pipes. A worker forked later inherits copies
and closes them first thing: while one stayed open there, an earlier worker's guard would
never read its end of file, and stopping that worker would wait GUARD_S for nothing."""


def _stop(
    process: Any,
    connection: Connection,
    watch: _MemoryWatch | None = None,
    guard: int = -1,
    ends: tuple[int, ...] = (),
) -> None:
    _TOOL_ENDS.difference_update(ends)  # before they are closed: the numbers get reused
    if watch is not None:
        watch.stop()
    if guard >= 0:
        with contextlib.suppress(OSError):
            os.close(guard)
    with contextlib.suppress(Exception):
        connection.close()
    # The end of file on the guard's pipe: the guard kills every process below it (a
    # setsid or a double fork included: it is their subreaper), then ends.
    with contextlib.suppress(Exception):
        process.join(GUARD_S)
    # A guard that is gone or stuck: the group at least (even a plain fork is in it).
    with contextlib.suppress(Exception):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        if process.is_alive():
            process.kill()
        process.join(2.0)


WATCH_S = 0.05
"""How often the parent measures a worker's memory."""
GUARD_S = 5.0
"""How long the tool waits for a worker's guard to kill what is below it."""
GUARD_POLL_S = 0.2


def _rss(pid: int | str = "self") -> int:
    """Resident memory of a process in bytes (0 when it cannot be read)."""
    return resident(pid)


TREE_EVERY = 10
"""The processes a step forked are measured every tenth look (reading what a process holds
privately costs milliseconds; the worker's own resident memory costs microseconds)."""


def _worker_of(guard: int, process: Any) -> int:
    """The worker below a guard: the guard's first child, forked before any plugin code
    runs there (the guard itself when it is gone or never forked)."""
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline and process.is_alive():
        found = children(guard)
        if found:
            return found[0]
        time.sleep(0.001)
    return guard


class _MemoryWatch:
    """Kills a worker and everything below it when their memory passes ``limit`` bytes.

    The address-space rlimit set in the worker is a first line only: as root a plugin can
    raise even the hard limit with one ``setrlimit`` call, and every process a step forks
    gets a limit of its own. This limit is enforced from outside, by the parent, where no
    plugin code runs, on the memory of the whole tree: ``pid`` (the worker) counts whole,
    as the tool's own memory is the baseline of ``limit``; every other process below
    ``root`` (the worker's guard) counts only the memory it does not share (a forked
    process starts sharing all of it). The guard itself allocates nothing.
    """

    def __init__(self, pid: int, limit: int, root: int | None = None) -> None:
        self.pid, self.limit = pid, limit
        self.root = pid if root is None else root
        self._others = 0
        self._looks = 0
        self.exceeded = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attn-memory-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(WATCH_S):
            used = _rss(self.pid)
            if used == 0:
                return  # gone
            if self._looks % TREE_EVERY == 0:
                others = [p for p in descendants(self.root) if p != self.pid]
                self._others = sum(private_memory(p) for p in others)
            self._looks += 1
            if used + self._others > self.limit:
                self.exceeded = True
                # Below the guard first: the guard (the root) then ends as well.
                for pid in descendants(self.root):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.killpg(self.root, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)
                return

    def stop(self) -> None:
        self._done.set()


@contextlib.contextmanager
def _quiet_fork_warning() -> Any:
    """Python 3.12+ warns about fork in a threaded process; the child runs no thread's code."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
        yield


# Child side -----------------------------------------------------------------------


class _Printed(io.StringIO):
    """The variant's printing, passed on with each step (the first OUTPUT_LIMIT characters)."""

    def take(self) -> str:
        text = self.getvalue()
        self.seek(0)
        self.truncate()
        if len(text) > OUTPUT_LIMIT:
            cut = len(text) - OUTPUT_LIMIT
            text = text[:OUTPUT_LIMIT] + f"\n… ({cut:,} more characters printed by the variant)\n"
        return text


def _with_warnings(printed: _Printed) -> str:
    """What the variant printed with this step, then its warnings, one line each."""
    kept = take_warnings()
    text = printed.take()
    return text + "".join(line + "\n" for line in kept) if kept else text


def _serve(owner: _Run, connection: Connection, parents_end: Connection) -> None:
    """The child: run the variant one step per ``next`` and send each step back."""
    import torch  # the parent imports this module before torch; the child needs it

    own = {*_fds(parents_end), owner.guard[1]}
    parents_end.close()  # so that the parent going away reads as the end of the requests
    for fd in _TOOL_ENDS - own:  # other workers' ends, inherited by the fork
        with contextlib.suppress(OSError):
            os.close(fd)

    with contextlib.suppress(OSError):  # its own group, killed as one when the run ends
        os.setpgid(0, 0)
    # Ctrl+C reaches the whole process group; the parent answers it and stops this child.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _guard_the_worker(*owner.guard)  # from here on, this is the worker below its guard
    torch.set_num_threads(1)  # the parent's OpenMP threads do not survive fork
    _NUMPY_DTYPES.update({torch.float16, torch.float32, torch.float64, torch.bool, torch.uint8})
    _NUMPY_DTYPES.update({torch.int8, torch.int16, torch.int32, torch.int64})
    printed = _Printed()
    sys.stdout = sys.stderr = printed
    drop_warnings()  # the tool's own, copied by the fork
    keep_warnings()  # the variant's come back with its step, one line each
    with contextlib.suppress(OSError):  # C-level writes must not draw over the app
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    _limit_memory(owner.limits.memory_mb)
    trace = Trace(owner.variant, owner.context, owner.plugin, owner.roots)
    trace.report_padding = False  # the tool warns, told by the last message (its output's)
    signal.signal(signal.SIGUSR1, lambda signum, frame: _say_where(connection, trace, frame))
    reported = 0

    def changes() -> list[str]:
        nonlocal reported
        new = trace.torch_changes[reported:]
        reported = len(trace.torch_changes)
        return list(new)

    worker = os.getpid()
    while True:
        try:
            if connection.recv_bytes() != b"next":
                return
        except (EOFError, OSError):
            return
        try:
            step = next(trace)
            message: tuple[Any, ...] = ("step", _sendable(step), changes(), _with_warnings(printed))
        except StopIteration:
            output = _sendable_tensor(trace.output)
            read = trace.read_padding is True
            message = ("end", output, changes(), _with_warnings(printed), read)
        except TracerError as error:
            error = _memory_error(error, owner)
            location = error.location
            fields = (location.path, location.line, location.column) if location else None
            message = (
                "error",
                type(error).__name__,
                error.message,
                fields,
                changes(),
                printed.take(),
            )
        except KeyboardInterrupt:  # SIGINT is ignored here: the plugin raised it itself
            where = (owner.source_file, None, None)
            text = f"variant '{owner.variant.name}' failed: raised KeyboardInterrupt"
            message = ("error", "VariantRunError", text, where, changes(), printed.take())
        except BaseException as exc:  # anything else is our own failure
            text = traceback.format_exception_only(type(exc), exc)[-1].strip()
            message = ("error", "PluginError", f"worker failed: {text}", None, [], "")
        if os.getpid() != worker:  # a copy of the worker that the step forked: only one answers
            _REAL_EXIT(0)
        drop_warnings()  # a failed step's warnings are noise beside its one-line error
        try:
            _send(connection, message)
        except (pickle.PicklingError, TypeError, AttributeError, RuntimeError) as exc:
            text = f"{type(exc).__name__}: {exc}".splitlines()[0]
            where = (owner.source_file, None, None)
            refused = (
                f"variant '{owner.variant.name}' yielded a step that cannot be passed on: {text}"
            )
            _send(connection, ("error", "VariantRunError", refused, where, [], ""))
            return
        if message[0] != "step":
            return


# Messages ------------------------------------------------------------------------------
# A message is three parts: the sizes of its out-of-band buffers, the pickle, the buffers.
# Tensors travel as numpy arrays whose values are sent as raw buffers (pickle protocol 5):
# torch's own pickling copies a 16 MB score matrix through a zip archive, ten times slower.


def _send(connection: Connection, message: tuple[Any, ...]) -> None:
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    views = [buffer.raw() for buffer in buffers]
    # The parent's "where are you stuck?" signal must not land between the parts.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        connection.send_bytes(pickle.dumps([view.nbytes for view in views]))
        connection.send_bytes(data)
        for view in views:
            connection.send_bytes(view)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


class _Refused(Exception):
    """A worker sent something that is not part of the protocol (never run, never built)."""


_ALLOWED = {
    # Named where each class lives, so moving one between modules cannot refuse it.
    *(
        (kind.__module__, kind.__qualname__)
        for kind in (Stage, SubStep, Dot, Accumulate, *STAGE_EQUATIONS)
    ),
    ("tracer.tracing.worker", "_unpack"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("collections", "OrderedDict"),
}
"""What the worker's messages are made of: steps, their equations, and tensors (as numpy
arrays, or torch's own pickling for the rest)."""


class _MessageUnpickler(pickle.Unpickler):
    """Builds only the classes and calls a step needs: a plugin controls every byte its
    worker sends, and an ordinary unpickler would run whatever call those bytes name."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if (module, name) == ("torch.storage", "_load_from_bytes"):
            return _load_storage
        if module == "torch" and name in _TORCH_DTYPES:
            return super().find_class(module, name)
        raise _Refused(f"{module}.{name}")


_TORCH_DTYPES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
}


def _load_storage(data: bytes) -> Any:
    """torch's own pickling of a storage, read by torch's restricted (weights only) loader."""
    import torch  # imported by the time a tensor arrives; this module is imported before

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(io.BytesIO(data), weights_only=True)


def _loads(data: bytes, buffers: Sequence[Any] = ()) -> Any:
    try:
        return _MessageUnpickler(io.BytesIO(data), buffers=buffers).load()
    except _Refused:
        raise
    except Exception as exc:  # truncated or malformed bytes
        raise _Refused(f"unreadable message ({type(exc).__name__})") from None


def _read(connection: Connection) -> tuple[Any, ...]:
    sizes = _loads(connection.recv_bytes())
    if not (isinstance(sizes, list) and all(type(size) is int and size >= 0 for size in sizes)):
        raise _Refused("unreadable message (buffer sizes)")
    data = connection.recv_bytes()
    buffers = []
    for size in sizes:
        buffer = bytearray(size)  # writable, so the tensors built on it are ordinary tensors
        try:
            if size:
                connection.recv_bytes_into(buffer)
            else:
                connection.recv_bytes()
        except multiprocessing.BufferTooShort:  # two writers (a step that forked), interleaved
            raise _Refused("a message that does not fit its announced size") from None
        buffers.append(buffer)
    message: tuple[Any, ...] = _loads(data, buffers)
    if not _well_formed(message):
        raise _Refused("a message of the wrong form")
    return message


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _well_formed(message: object) -> bool:
    """The message has the shape ``_serve`` sends (what is in a step is checked later)."""
    if not (isinstance(message, tuple) and message):
        return False
    kind, fields = message[0], message[1:]
    if kind == "end":  # the output, torch changes, what it printed, whether it read padding
        return (
            len(fields) == 4
            and _strings(fields[1])
            and isinstance(fields[2], str)
            and type(fields[3]) is bool
        )
    if kind == "step":
        return len(fields) == 3 and _strings(fields[1]) and isinstance(fields[2], str)
    if kind == "error":
        if len(fields) != 5:
            return False
        name, text, location, changes, printed = fields
        return (
            isinstance(name, str)
            and isinstance(text, str)
            and (
                location is None
                or (
                    isinstance(location, tuple)
                    and len(location) == 3
                    and isinstance(location[0], str)
                    and all(part is None or type(part) is int for part in location[1:])
                )
            )
            and _strings(changes)
            and isinstance(printed, str)
        )
    if kind == "where":
        where = fields[0] if len(fields) == 1 else ()
        return where is None or (
            isinstance(where, tuple) and len(where) == 3 and isinstance(where[0], str)
        )
    return False


class _Packed:
    """A tensor on its way to the parent, as a numpy array (see the note above ``_send``)."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpack, (self.array,))


def _unpack(array: Any) -> torch.Tensor:
    import torch  # see _load_storage

    return torch.from_numpy(array)


def _sendable(step: Step) -> Step:
    """A shallow copy to send: the child's own step keeps its tensors (copy-on-write holds it)."""
    sent = copy.copy(step)
    sent.tensors = {name: _sendable_tensor(t) for name, t in step.tensors.items()}
    return sent


def _sendable_tensor(tensor: torch.Tensor | None) -> Any:
    """A copy the parent can unpickle: no autograd graph, no storage beyond its own values."""
    import torch  # in the child, where torch is loaded (see _serve)

    if not isinstance(tensor, torch.Tensor):
        return tensor
    tensor = tensor.detach()
    needed = tensor.numel() * tensor.element_size()
    if tensor.is_contiguous() and tensor.untyped_storage().nbytes() > needed:
        tensor = tensor.clone()  # a row of a big matrix would otherwise send the whole matrix
    if tensor.is_contiguous() and tensor.dtype in _NUMPY_DTYPES:
        with contextlib.suppress(Exception):  # named tensors and other oddities pickle as tensors
            return _Packed(tensor.numpy())
    return tensor  # bfloat16, or an expanded view: torch's own pickling keeps it small


def _memory_error(error: TracerError, owner: _Run) -> TracerError:
    """Say "out of memory" and name the limit, rather than the allocator's own words."""
    cause = error.__cause__
    text = str(cause).lower()
    if isinstance(cause, MemoryError) or "can't allocate memory" in text or "out of memory" in text:
        return VariantRunError(
            f"variant '{owner.variant.name}' ran out of memory: it needed more than the "
            f"{owner.limits.memory_mb:,} MiB it may use ({MEMORY_ENV}=MIB raises the limit)",
            error.location,
        )
    return error


def _guard_the_worker(read_fd: int, write_fd: int) -> None:
    """Split this process in two: a guard that stays here and the worker, its child.

    Returns in the worker only. The guard runs no plugin code. It is a child subreaper,
    so every process the variant starts stays below it, even one that calls ``setsid``
    or forks twice to leave the worker's group. It waits on a pipe only the tool can
    write to: end of file means the run is over or the tool has died (even by
    ``kill -9``), and the guard kills everything below it and ends. When the worker
    ends first, the guard kills what the worker left behind and ends the same way as
    the worker did, so the tool reads the worker's exit status from the guard.
    """
    if read_fd < 0:  # no pipe (not from WorkerTrace._spawn): a worker with no guard
        die_with_parent()
        return
    with contextlib.suppress(OSError):
        os.close(write_fd)  # only the tool holds it: its death is the end of file
    die_with_parent()  # the guard itself: only if the tool dies before the fork
    become_subreaper()
    try:
        worker = os.fork()
    except OSError:
        os._exit(71)  # the tool reports that the worker could not start
    if worker == 0:
        os.close(read_fd)
        die_with_parent()  # the worker dies with its guard
        return
    try:
        _guard(worker, read_fd)
    finally:
        os._exit(70)


def _guard(worker: int, read_fd: int) -> None:
    # Nothing of the tool's stays open here: the worker's end of file must reach the tool.
    with contextlib.suppress(OSError, ValueError):
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2 and int(name) != read_fd:
                with contextlib.suppress(OSError):
                    os.close(int(name))
    # The tool's death must not kill the guard at once: the pipe tells it, and it cleans up.
    prctl(PR_SET_PDEATHSIG, 0)
    # "Where are you stuck?" is meant for the worker.
    signal.signal(signal.SIGUSR1, lambda signum, frame: os.kill(worker, signal.SIGUSR1))
    status: int | None = None
    while status is None:
        with contextlib.suppress(InterruptedError):
            ready, _, _ = select.select([read_fd], [], [], GUARD_POLL_S)
            if ready and not os.read(read_fd, 1):
                break  # the run is over, or the tool is gone
        reap()  # the worker, and orphans that ended (they come back to the guard)
        status = reaped.pop(worker, None)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.kill(worker, signal.SIGKILL)
    kill_descendants()
    if status is None:
        status = reaped.pop(worker, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(Exception):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(Exception):
            signal.signal(number, signal.SIG_DFL)
        with contextlib.suppress(Exception):
            os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0)


def _say_where(connection: Connection, trace: Trace, frame: Any) -> None:
    """SIGUSR1: send the deepest line of the plugin's own files that is running now."""
    where = None
    while frame is not None:
        if trace._lines.covers(frame.f_code.co_filename):
            where = (frame.f_code.co_filename, frame.f_lineno, None)
            break
        frame = frame.f_back
    with contextlib.suppress(Exception):
        _send(connection, ("where", where))


def _limit_memory(megabytes: int) -> None:
    """Cap the address space at what the child has now plus ``megabytes``."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[0])
        used = pages * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = used + megabytes * 2**20
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        # Hard as well as soft (the parent's memory watch holds even where this is lifted).
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no RLIMIT_AS: the time limit still holds


__all__ = [
    "WorkerLimits",
    "WorkerTrace",
    "isolation_mode",
    "should_isolate",
]
