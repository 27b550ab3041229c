"""Run ``attn ARGS`` in a child forked from the test process, not in a fresh interpreter.

``subprocess.run([sys.executable, "-m", "tracer", ...])`` spends about two CPU-seconds
importing torch and the tracer before ``attn`` does anything; the test process has
already imported both. :func:`run_attn` forks it instead and gives the child what a
fresh ``python -m tracer`` would have, so a test about what ``attn`` *does* switches with
a one-line change:

- its own session and process group (a timeout kills the whole group), ending with the
  test process (``PR_SET_PDEATHSIG``);
- the signal handlers, mask and wake-up fd a fresh interpreter starts with (SIGINT raises
  KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored, every other signal at its default);
- stdin from the given bytes or ``/dev/null``, stdout and stderr on pipes (or all three on
  a pseudo-terminal), and new ``sys.stdin/stdout/stderr`` on fds 0, 1, 2 with the encoding,
  errors and buffering the interpreter would choose (pytest has replaced them);
- ``os.environ`` replaced by the given environment, the given working folder, ``sys.argv``
  and ``sys.path[0]`` as ``-m`` sets them;
- torch on one thread (the test process's OpenMP threads did not fork, and a child that
  uses more hangs in their pool) and a fresh random seed for torch, numpy and ``random``;
- Python's default warning filters and exception hooks (pytest's are collecting), no
  faulthandler, no tracer; the test process's objects frozen (``gc.freeze``), so the
  collector never finalizes them in the child;
- process-wide state of the tracer that a fresh interpreter would not have: the learner's
  shared sandbox server (the test process's own), the exit statuses of the test process's
  children, the cached built-in plugin host and the source caches; see
  :func:`_fresh_process`.

Then it runs ``tracer/__main__.py`` as ``__main__`` (what ``python -m tracer`` runs), joins
non-daemon threads and runs the ``atexit`` functions registered during the run, flushes,
and leaves with ``os._exit`` (never back into pytest), with the exit status the
interpreter would have given (``SystemExit``, a traceback and 1, or death by SIGINT).

What forking cannot give: whatever the interpreter reads at start-up, and the interpreter's
own exit (its atexit hooks and weakref finalizers were registered by the test process and are
skipped), so a test of what happens when ``attn`` exits normally keeps a real interpreter.
Descriptors above 2 are pointed at /dev/null, as ``subprocess`` would close them. An environment that
differs from the test process's in a ``PYTHON*``, ``LANG`` or ``LC_*`` variable raises
:class:`StartUpDiffers`: such a test keeps a real subprocess. ``PYTHONUNBUFFERED`` is the
exception: the child's streams are opened unbuffered as the interpreter's would be. The entry points seen are the
test process's (``conftest._only_builtin_entry_points``: built-ins and the plugins a test
makes, not plugin distributions installed beside the project).

Tests about starting an interpreter (the ``attn`` script, ``python -m tracer``, packaging,
the README's commands) keep real subprocesses, and so does at least one test per command
family, so a start-up failure cannot hide behind the fork.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gc
import io
import linecache
import os
import posix
import selectors
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracer.processes import die_with_parent

_EXIT = posix._exit  # never a patched os._exit
_START_UP = ("PYTHON", "LANG", "LC_")
"""Environment variables the interpreter reads before ``attn`` runs: a fork cannot apply them."""
_APPLIED = frozenset({"PYTHONUNBUFFERED"})
"""Except these, which the child applies as the interpreter would (see :func:`_fresh_streams`)."""


class StartUpDiffers(ValueError):
    """The test needs an interpreter started with another environment: use a subprocess."""


def run_attn(
    *argv: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    timeout: float = 120,
    text: bool = True,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run([sys.executable, "-m", "tracer", *argv], capture_output=True, ...)``,
    forked: stdin is ``input`` (or ``/dev/null``), stdout and stderr are captured."""
    environment = _checked(env)
    stdin_read, stdin_write = os.pipe() if input is not None else (-1, -1)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    pid = _fork(
        argv,
        cwd,
        environment,
        preexec_fn,
        stdin=stdin_read,
        stdout=out_write,
        stderr=err_write,
        close=[fd for fd in (stdin_write, out_read, err_read) if fd >= 0],
    )
    for fd in (stdin_read, out_write, err_write):
        if fd >= 0:
            os.close(fd)
    data = input.encode() if isinstance(input, str) else input
    try:
        outputs = _communicate(
            pid, {out_read: b"", err_read: b""}, stdin_write, data, timeout, argv
        )
    finally:
        os.close(out_read)
        os.close(err_read)
    status = _wait(pid)
    out, err = outputs[out_read], outputs[err_read]
    if text:
        return subprocess.CompletedProcess(_cmd(argv), status, _decoded(out), _decoded(err))
    return subprocess.CompletedProcess(_cmd(argv), status, out, err)


def run_attn_on_terminal(
    *argv: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> tuple[int, str]:
    """``attn ARGV`` with stdin, stdout and stderr on a pseudo-terminal that is its
    controlling terminal (as ``pty.fork`` gives): (exit status, all it wrote)."""
    import pty

    environment = _checked(env)
    primary, secondary = pty.openpty()
    pid = _fork(
        argv,
        cwd,
        environment,
        None,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close=[primary],
        terminal=True,
    )
    os.close(secondary)
    try:
        output = _communicate(pid, {primary: b""}, -1, None, timeout, argv)[primary]
    finally:
        os.close(primary)
    return _wait(pid), output.decode("utf-8", "replace")


class Started:
    """A forked ``attn`` left running, its output discarded: ``subprocess.Popen``'s
    ``pid``, ``kill`` (SIGKILL to it alone) and ``wait``."""

    def __init__(self, pid: int, argv: Sequence[str]) -> None:
        self.pid = pid
        self.argv = list(argv)
        self.returncode: int | None = None

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(_cmd(self.argv), timeout)
            else:
                time.sleep(0.02)
        return self.returncode


def start_attn(
    *argv: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Started:
    """``subprocess.Popen([sys.executable, "-m", "tracer", *argv])`` with stdin, stdout and
    stderr on ``/dev/null``, forked; the caller kills and waits for it."""
    environment = _checked(env)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        pid = _fork(argv, cwd, environment, None, stdin=-1, stdout=null, stderr=null, close=[])
    finally:
        os.close(null)
    return Started(pid, argv)


def start_attn_on_terminal(
    *argv: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    size: tuple[int, int] = (120, 40),
) -> tuple[Started, int]:
    """``attn ARGV`` left running on a pseudo-terminal of ``size`` (columns, rows) that is
    its controlling terminal: the process, and the terminal's other side (a descriptor the
    caller reads the output from, writes key presses to, and closes to hang up)."""
    import fcntl
    import pty
    import struct
    import termios

    environment = _checked(env)
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    try:
        pid = _fork(
            argv,
            cwd,
            environment,
            None,
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            close=[primary],
            terminal=True,
        )
    finally:
        os.close(secondary)
    return Started(pid, argv), primary


def _cmd(argv: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "tracer", *argv]


def _checked(env: Mapping[str, str] | None) -> dict[str, str]:
    environment = dict(os.environ if env is None else env)
    differs = sorted(
        name
        for name in set(environment) | set(os.environ)
        if name.startswith(_START_UP)
        and name not in _APPLIED
        and environment.get(name) != os.environ.get(name)
    )
    if differs:
        raise StartUpDiffers(
            f"{', '.join(differs)} must be read by a starting interpreter; "
            "run this test's attn in a real subprocess"
        )
    return environment


def _decoded(data: bytes) -> str:
    """What ``subprocess.run(text=True)`` returns: the locale's encoding, universal newlines."""
    import locale

    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


_warmed = False


def _warm() -> None:
    """Import, once per test process, what ``attn`` imports: each child then has it for free.

    Only modules (torch, the tracer's commands, the built-in plugins); none keeps state
    that a command's run would see (what does is reset in :func:`_fresh_process`).
    """
    global _warmed
    if _warmed:
        return
    import importlib
    from importlib import metadata

    import torch  # noqa: F401

    from tracer.cli.main import COMMAND_MODULES

    for name in COMMAND_MODULES:
        importlib.import_module(f"tracer.cli.{name}")
    for module in (
        "tracer.tracing.runner",
        "tracer.render.text",
        "tracer.tracing.worker",
        "tracer.learner.check",
        "tracer.learner.isolation",
        "tracer.lessons.loader",
        "tracer.text.plain_lesson",
        "tracer.text.export",
    ):
        importlib.import_module(module)
    for entry_point in metadata.entry_points(group="attention_tracer"):
        if entry_point.value.startswith("tracer."):
            entry_point.load()  # the built-in plugins (ours), never one installed beside us
    _warmed = True


def _fork(
    argv: Sequence[str],
    cwd: str | os.PathLike[str] | None,
    env: dict[str, str],
    preexec_fn: Callable[[], None] | None,
    *,
    stdin: int,
    stdout: int,
    stderr: int,
    close: Sequence[int],
    terminal: bool = False,
) -> int:
    _warm()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    # No signal between the fork and the child's own handlers: one raised there would unwind
    # into pytest's frames in the child, which would then go on running the suite.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        pid = os.fork()
    finally:
        if os.getpid() == parent:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if pid:
        return pid
    status = 70
    try:  # the child never leaves this block but through _EXIT
        # What the test process holds is never collected in the child: no finalizer of the
        # test process's objects (say a trace with a worker) runs here, and the collector
        # walks only what this run makes, as in a fresh interpreter after its imports.
        gc.freeze()
        try:
            for fd in close:
                os.close(fd)
            os.setsid()
            die_with_parent()
            if os.getppid() != parent:
                _EXIT(70)
            if terminal:
                import fcntl
                import termios

                fcntl.ioctl(stdin, termios.TIOCSCTTY, 0)
            null = os.open(os.devnull, os.O_RDONLY) if stdin < 0 else stdin
            for target, fd in ((0, null), (1, stdout), (2, stderr)):
                os.dup2(fd, target)
            if cwd is not None:
                os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            _fresh_streams()
            _fresh_process()
            _close_inherited()
            _fresh_signals()  # last: handlers set, then the mask lifted
            if preexec_fn is not None:
                preexec_fn()
        except BaseException:
            with contextlib.suppress(BaseException):
                os.write(2, traceback.format_exc().encode())
            _EXIT(70)
        status = _run_main(argv)
    finally:
        _EXIT(status)


def _close_inherited() -> None:
    """Let go of every descriptor above 2, as ``subprocess`` closes them (``close_fds``): the
    test process's capture files, xdist's channel, a notebook kernel's sockets and the like.

    Each is pointed at /dev/null rather than closed: Python objects inherited from the test
    process still own those numbers, and one closing "its" descriptor after the number was
    reused would close a file of this run's."""
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != null:
            with contextlib.suppress(OSError):  # the listing's own descriptor, gone by now
                os.dup2(null, fd)
    os.close(null)


def _fresh_signals() -> None:
    """The handlers, mask and wake-up fd of a freshly started Python (the mask lifted last)."""
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _fresh_streams() -> None:
    """``sys.stdin/stdout/stderr`` on fds 0, 1, 2 as the interpreter opens them at start-up:
    its encoding and error handler; unbuffered (``-u``) they write through, else stdout is
    line-buffered on a terminal and stderr always."""
    import locale

    # A non-empty PYTHONUNBUFFERED (the child's own environment by now): stdout and stderr
    # unbuffered, writing through; stdin as ever. Not this process's ``-u`` (xdist starts
    # its workers so): ``python -m tracer`` would not have it.
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))

    def stream(fd: int, name: str, original: Any) -> io.TextIOWrapper:
        encoding = getattr(original, "encoding", None) or locale.getpreferredencoding(False)
        errors = getattr(original, "errors", None) or "strict"
        if fd == 0:
            raw: Any = io.FileIO(fd, "rb", closefd=False)
            return io.TextIOWrapper(io.BufferedReader(raw), encoding, errors)
        raw = io.FileIO(fd, "wb", closefd=False)
        buffered = raw if unbuffered else io.BufferedWriter(raw)
        return io.TextIOWrapper(
            buffered,  # type: ignore[arg-type]
            encoding,
            errors,
            line_buffering=not unbuffered and (fd == 2 or os.isatty(fd)),
            write_through=unbuffered,
        )

    sys.stdin = sys.__stdin__ = stream(0, "<stdin>", sys.__stdin__)
    sys.stdout = sys.__stdout__ = stream(1, "<stdout>", sys.__stdout__)
    sys.stderr = sys.__stderr__ = stream(2, "<stderr>", sys.__stderr__)


def _fresh_process() -> None:
    """Undo what the test process holds that a fresh interpreter would not."""
    import importlib
    import random
    import threading
    import warnings

    import torch

    import tracer.learner.isolation as isolation
    from tracer import processes
    from tracer.learner.check import _builtin_host
    from tracer.tracing.lines import _statement_spans

    # The test process's threads did not fork; torch must not wait on their pool.
    torch.set_num_threads(1)
    torch.seed()
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    # Python's own defaults, not pytest's collecting hooks and warning filters.
    warnings.resetwarnings()
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
    warnings.filterwarnings("ignore", category=ImportWarning)
    warnings.filterwarnings("ignore", category=ResourceWarning)
    sys.excepthook = sys.__excepthook__
    sys.unraisablehook = sys.__unraisablehook__
    threading.excepthook = threading.__excepthook__
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)  # type: ignore[arg-type]
    threading.setprofile(None)  # type: ignore[arg-type]
    import faulthandler

    faulthandler.disable()
    gc.enable()
    atexit._clear()  # the test process's (pytest's) are not this run's
    # The tracer's process-wide state: the test process's learner sandbox server (a
    # socket to a process this child must not share), caches a fresh run fills anew.
    isolation._shared = None
    processes.reaped.clear()  # statuses of the test process's children, by pid
    _builtin_host.cache_clear()
    _statement_spans.cache_clear()
    linecache.clearcache()
    importlib.invalidate_caches()


def _run_main(argv: Sequence[str]) -> int:
    """``python -m tracer ARGV`` from here on; the exit status the interpreter would give."""
    import runpy
    import threading

    sys.argv = ["-m", *argv]  # runpy puts the module's path first, as -m does
    sys.path.insert(0, os.getcwd())
    status = 0
    try:
        runpy.run_module("tracer", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        status = _exit_status(exit.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = -signal.SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]  (non-daemon threads, as at exit)
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            if status == 0:
                status = 120  # what the interpreter exits with when it cannot flush
    if status == -signal.SIGINT:  # as Python does: die of the signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 130
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1


def _communicate(
    pid: int,
    outputs: dict[int, bytes],
    stdin: int,
    data: bytes | None,
    timeout: float,
    argv: Sequence[str],
) -> dict[int, bytes]:
    """Feed stdin and read every output to its end. On a timeout (or the test being
    interrupted) the child's whole group is killed and the child reaped first."""
    deadline = time.monotonic() + timeout
    pending = memoryview(data or b"")
    if stdin >= 0 and not pending:
        os.close(stdin)
        stdin = -1
    try:
        with selectors.DefaultSelector() as selector:
            for fd in outputs:
                selector.register(fd, selectors.EVENT_READ)
            if stdin >= 0:
                os.set_blocking(stdin, False)
                selector.register(stdin, selectors.EVENT_WRITE)
            open_outputs = set(outputs)
            while open_outputs:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(_cmd(argv), timeout)
                for key, _ in selector.select(min(left, 1.0)):
                    fd = int(key.fd)
                    if fd == stdin:
                        try:
                            pending = pending[os.write(stdin, pending[:65536]) :]
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(stdin)
                            os.close(stdin)
                            stdin = -1
                        continue
                    try:
                        chunk = os.read(fd, 65536)
                    except OSError as error:  # a pseudo-terminal whose other side closed
                        if error.errno != errno.EIO:
                            raise
                        chunk = b""
                    if chunk:
                        outputs[fd] += chunk
                    else:
                        selector.unregister(fd)
                        open_outputs.discard(fd)
    except BaseException:
        _kill(pid)
        _wait(pid)
        raise
    finally:
        if stdin >= 0:
            os.close(stdin)
    return outputs


def _kill(pid: int) -> None:
    """SIGKILL to the child's group, and to the child itself (no group yet before its setsid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


WAIT_S = 60.0
"""How long a child that closed its output may take to exit before it is killed."""


def _wait(pid: int, limit: float = WAIT_S) -> int:
    """The child's exit status; killed (and TimeoutExpired) if it has not ended within ``limit``."""
    deadline = time.monotonic() + limit
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            _kill(pid)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(f"forked attn (pid {pid})", limit)
        time.sleep(0.005)
