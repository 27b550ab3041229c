"""Writing the user's files so that nothing is lost: atomic, locked, links kept, no overwrite.

* :func:`write_atomic`: a temporary file in the same folder, flushed to disk, then
  ``os.replace``: a full disk or a kill leaves the old file whole, never a truncated
  one. A symlink stays a symlink: the file it points to is what gets replaced.
* :func:`locked`: an exclusive ``flock`` on the folder that holds the file, so two
  instances reading, merging and writing it take turns (a lock on the file itself
  would be lost with the inode ``os.replace`` swaps out; a lock file would be one
  more file in the learner's folder).
* :func:`set_aside`: move a damaged file to ``NAME.corrupt`` (or ``.corrupt.1``,
  ``.corrupt.2``, ...), never over an earlier copy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows: no flock, and locked() locks nothing
    fcntl = None


def target_of(path: Path) -> Path:
    """The file a path stands for: a symlink's target (followed to the end), else itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path``'s contents with ``text`` all at once; raises OSError on failure."""
    target = target_of(path)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):  # keep the permissions the user gave the file
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock for ``path`` (a no-op where flock or the folder is missing)."""
    if fcntl is None:  # Windows
        yield
        return
    try:
        fd = os.open(target_of(path).parent, os.O_RDONLY)
    except OSError:
        yield  # no folder yet, or one we cannot open: the write reports the problem
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
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


__all__ = ["locked", "set_aside", "target_of", "write_atomic"]
