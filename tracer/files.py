"""Writing the user's files so that nothing is lost: atomic, locked, links kept, no overwrite.

* :func:`write_atomic`: a temporary file in the same folder, flushed to disk, then
  ``os.replace``: a full disk or a kill leaves the old file whole, never a truncated
  one. A symlink stays a symlink: the file it points to is what gets replaced.
* :func:`write_new`: the same temporary file, then a hard link to the name, which
  fails if the name exists: the file appears whole or not at all, and of two
  processes writing the same new name, one wins and the other is told.
* :func:`locked`: an exclusive ``flock`` on the folder that holds the file, so two
  instances reading, merging and writing it take turns (a lock on the file itself
  would be lost with the inode ``os.replace`` swaps out; a lock file would be one
  more file in the learner's folder). The wait is bounded (:data:`LOCK_WAIT_S`):
  a holder that never lets go gives :class:`LockTimeout`, never a hang.
* :func:`set_aside`: move a damaged file to ``NAME.corrupt`` (or ``.corrupt.1``,
  ``.corrupt.2``, ...), never over an earlier copy.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows: no flock, and locked() locks nothing
    fcntl = None

LOCK_WAIT_S = 10.0
"""Seconds :func:`locked` waits for another process to let go of a folder's lock."""


class LockTimeout(OSError):
    """Another process held the lock for longer than the wait allows."""


def target_of(path: Path) -> Path:
    """The file a path stands for: a symlink's target (followed to the end), else itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _write_temporary(temporary: Path, text: str | bytes) -> None:
    data = text.encode("utf-8") if isinstance(text, str) else text
    with open(temporary, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_new(path: Path, text: str) -> None:
    """Create ``path`` holding ``text``, whole or not at all; FileExistsError if it exists
    (a symlink included, dangling or not), even when it appears while ``text`` is written.
    Raises OSError on failure, leaving nothing behind."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        _write_temporary(temporary, text)
        try:
            os.link(temporary, path, follow_symlinks=False)  # never replaces: exclusive
        except FileExistsError:
            raise
        except OSError:  # no hard links on this file system: create exclusively, then fill
            with open(path, "x", encoding="utf-8") as handle:
                try:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                except OSError:
                    with contextlib.suppress(OSError):
                        path.unlink()
                    raise
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def write_atomic(path: Path, text: str | bytes) -> None:
    """Replace ``path``'s contents with ``text`` all at once; raises OSError on failure."""
    target = target_of(path)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()  # a stale one of a process that had this pid
        _write_temporary(temporary, text)
        with contextlib.suppress(OSError):  # keep the permissions the user gave the file
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


@contextlib.contextmanager
def locked(path: Path, wait: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock for ``path`` (a no-op where flock or the folder is missing).

    Raises :class:`LockTimeout` when another process holds it for more than ``wait`` s.
    """
    if fcntl is None:  # Windows
        yield
        return
    try:
        fd = os.open(target_of(path).parent, os.O_RDONLY)
    except OSError:
        yield  # no folder yet, or one we cannot open: the write reports the problem
        return
    try:
        wait = LOCK_WAIT_S if wait is None else wait
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(
                        errno.EWOULDBLOCK,
                        f"another process has held {target_of(path).parent} for more than "
                        f"{wait:g} s",
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def set_aside(path: Path, suffix: str = ".corrupt") -> Path | None:
    """Move ``path`` to the first free ``NAME.corrupt[.N]``; None if it cannot be moved."""
    for attempt in range(1000):
        name = path.name + (suffix if attempt == 0 else f"{suffix}.{attempt}")
        aside = path.with_name(name)
        try:
            os.link(path, aside, follow_symlinks=False)  # fails if the name is taken: no overwrite
        except FileExistsError:
            continue
        except OSError:  # no hard links here: rename, having checked the name is free
            if aside.exists() or aside.is_symlink():
                continue
            try:
                os.rename(path, aside)
            except OSError:
                return None
            return aside
        with contextlib.suppress(OSError):
            os.unlink(path)
        return aside
    return None


__all__ = [
    "LOCK_WAIT_S",
    "LockTimeout",
    "locked",
    "set_aside",
    "target_of",
    "write_atomic",
    "write_new",
]
