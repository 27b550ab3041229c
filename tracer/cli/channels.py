"""Standard output kept for a document (``--json``) that plugin code cannot write into.

A plugin may start a thread at import that prints for ever, or write to file
descriptor 1 from C. Before any plugin loads, :func:`private_stdout` keeps a
private duplicate of the real standard output for the document and points
descriptor 1 (and so ``print``) at standard error: whatever plugin code
prints lands there, and the document arrives whole.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TextIO

from tracer.processes import occupy_standard_fds


class ClosedOutput(io.TextIOBase):
    """Standard output that was closed when ``attn`` started: every write fails, as it would."""

    name = "<stdout>"
    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def standard_streams() -> None:
    """Streams that were closed at start-up: ``/dev/null`` on their descriptors (so no pipe
    or file takes their numbers), an empty stdin, a silent stderr, and a stdout whose
    writes fail (the command's output cannot be delivered, which the caller reports)."""
    occupy_standard_fds()
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (for the process)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    if sys.stdout is None:
        sys.stdout = ClosedOutput()


def discard_stdout() -> None:
    """Point descriptor 1 at ``/dev/null``: what is still buffered for a reader that went away
    or a device that is full is dropped quietly when the interpreter flushes at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, 1)
    except OSError:
        pass
    finally:
        os.close(devnull)


def private_stdout() -> TextIO:
    """A stream on the original standard output, with fd 1 moved to stderr from now on.

    Where standard output is not a real file (a test's capture), it is returned as is.
    """
    try:
        fd = sys.stdout.fileno()
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return sys.stdout
    if fd != 1:
        return sys.stdout
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return io.TextIOWrapper(io.FileIO(private, "w", closefd=True), encoding=encoding)


def write_document(stream: TextIO, text: str) -> None:
    """Write and flush; a reader that went away (``| head``) is not our error, nor a traceback.

    On any failure (a closed stream, a full device) what is still buffered is dropped, so
    closing the stream at exit does not fail a second time; the error is the caller's.
    """
    try:
        stream.write(text)
        stream.flush()
    except OSError:
        if stream is not sys.stdout:
            _drop(stream)
        raise


def _drop(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at ``/dev/null`` (nothing to do where it has none)."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return
    try:
        os.dup2(devnull, fd)  # so closing it at exit flushes quietly
    except OSError:
        pass
    finally:
        os.close(devnull)


__all__ = ["ClosedOutput", "discard_stdout", "private_stdout", "standard_streams", "write_document"]
