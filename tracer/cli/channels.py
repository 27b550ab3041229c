"""Standard output kept for a document (``--json``) that plugin code cannot write into.

A plugin may start a thread at import that prints for ever, or write to file
descriptor 1 from C. Before any plugin loads, :func:`private_stdout` keeps a
private duplicate of the real standard output for the document and points
descriptor 1 (and so ``print``) at standard error: whatever plugin code
prints lands there, and the document arrives whole.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TextIO


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
    """Write and flush; a reader that went away (``| head``) is not our error, nor a traceback."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            if stream is not sys.stdout:
                os.dup2(devnull, stream.fileno())  # so closing it at exit flushes quietly
        finally:
            os.close(devnull)
        raise


__all__ = ["private_stdout", "write_document"]
