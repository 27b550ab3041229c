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
* :func:`read_regular`: read a file that must be a regular one: a FIFO, a folder, a
  device or a socket in its place is refused at once (:class:`NotRegularFile`), never
  opened in a way that could block.

A symlink loop is an error (``ELOOP``) for every one of them: the link is never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
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


class NotRegularFile(OSError):
    """A path that should hold a file holds a FIFO, a folder, a device or a socket."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a FIFO", "a folder", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(path: Path, mode: int) -> NotRegularFile:
    kind = kind_of(mode)
    what = kind if kind.startswith("not") else f"{kind}, not a regular file"
    return NotRegularFile(errno.EINVAL, what, str(path))


def target_of(path: Path) -> Path:
    """The file a path stands for: a symlink's target (followed to the end), else itself.

    A symlink loop (or a chain too long to follow) raises OSError ``ELOOP``, so that
    nothing writes over the link itself. A dangling link stands for its missing target.
    """
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if target.is_symlink():  # realpath gives up on a loop and returns a link
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
    return target


def check_regular(path: Path) -> bool:
    """True if ``path`` (a symlink followed) is a regular file, False if nothing is there;
    :class:`NotRegularFile` for anything else, OSError (``ELOOP``, ``EACCES``) if it cannot
    be told. Opens nothing."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if path.is_symlink():  # dangling, or a loop: a loop is an error
            target_of(path)
        return False
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)
    return True


def read_regular(path: Path, offset: int = 0) -> bytes:
    """The bytes of the regular file ``path`` (a symlink followed) from ``offset`` on.

    Anything else there raises :class:`NotRegularFile` without blocking: the kind is
    checked before opening, the file is opened non-blocking (a FIFO that appears in
    between does not wait for a writer), and checked again on the open descriptor.
    FileNotFoundError when nothing is there; other OSErrors as the system gives them.
    """
    check_regular(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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


def write_atomic(path: Path, text: str | bytes, *, regular_only: bool = False) -> None:
    """Replace ``path``'s contents with ``text`` all at once; raises OSError on failure.

    ``regular_only``: refuse (:class:`NotRegularFile`) to replace anything but a regular
    file or nothing (a FIFO or a device where the file should be is left as it is).
    """
    target = target_of(path)
    if regular_only:
        check_regular(target)
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
        fd = os.open(_lock_folder(path), os.O_RDONLY)
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
                        f"another process has held {_lock_folder(path)} for more than {wait:g} s",
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _lock_folder(path: Path) -> Path:
    """The folder whose lock guards ``path``: its target's, or its own for a symlink loop."""
    try:
        return target_of(path).parent
    except OSError:
        return path.parent


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
    "NotRegularFile",
    "check_regular",
    "kind_of",
    "locked",
    "read_regular",
    "set_aside",
    "target_of",
    "write_atomic",
    "write_new",
]
