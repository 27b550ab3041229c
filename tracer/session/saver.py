"""Saving the learner's place off the UI thread, latest first, nothing lost on the way out.

Saving writes the progress file and waits for the disk (``fsync``): from a few to
tens of milliseconds on a loaded machine. A front end that saved on its own thread
after every move made the next key press wait for it. :class:`BackgroundSaver`
runs the saves on one writer thread instead:

- **Coalesced.** Moves that come while a save runs ask for one more save, not one
  each: a burst of key presses writes the file at most twice.
- **Latest wins.** The save reads the position when it runs (not when it was
  asked for), and saves run one at a time on one thread, so an older position is
  never written after a newer one.
- **Nothing lost.** :meth:`BackgroundSaver.flush` waits for a save in progress and
  then runs a pending one on the caller's thread: the way out (quitting, a
  hang-up, the screen closing) calls it and the last position is on disk when it
  returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["BackgroundSaver"]


class BackgroundSaver:
    """Runs ``save`` on a writer thread when asked; ``said`` gets its warnings.

    ``save`` returns a warning (the disk refused) or None. ``said`` is called on the
    writer thread (or the flushing one) with each warning: a front end passes it on
    to its own thread to show it.
    """

    def __init__(self, save: Callable[[], str | None], said: Callable[[str], object]) -> None:
        self._save = save
        self._said = said
        self._changed = threading.Condition()
        self._pending = False
        """A save was asked for and has not started yet."""
        self._running = False
        """The writer thread is saving now."""
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> bool:
        """Whether a save was asked for and has not finished yet."""
        with self._changed:
            return self._pending or self._running

    def request(self) -> None:
        """Save soon, on the writer thread (started on the first request)."""
        with self._changed:
            if self._closed:
                return
            self._pending = True
            if self._thread is None:
                self._thread = self._start_writer()
            self._changed.notify_all()

    def _start_writer(self) -> threading.Thread | None:
        thread = threading.Thread(target=self._write, name="attn-progress-saver", daemon=True)
        thread.start()
        return thread

    def flush(self) -> None:
        """Wait for the save in progress; run a pending one here. On return it is on disk."""
        with self._changed:
            while self._running:
                self._changed.wait()
            pending, self._pending = self._pending, False
        if pending:
            self._run()

    def close(self) -> None:
        """Flush, then stop the writer thread (requests after this save nothing)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self.flush()

    def _write(self) -> None:
        while True:
            with self._changed:
                while not self._pending and not self._closed:
                    self._changed.wait()
                if not self._pending:
                    return  # closed, and nothing left to save
                self._pending, self._running = False, True
            try:
                self._run()
            finally:
                with self._changed:
                    self._running = False
                    self._changed.notify_all()

    def _run(self) -> None:
        try:
            warning = self._save()
        except Exception as error:  # a save that raised must not end the writer thread
            warning = f"could not save progress: {error}"
        if warning:
            self._said(warning)
