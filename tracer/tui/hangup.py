"""The app ends when its terminal goes away, whatever it was doing.

Textual writes to the terminal through a thread fed by a bounded queue (its
``WriterThread``). When the terminal goes away mid-write (the pseudo-terminal
closed, its output full because nobody reads it), the thread dies or blocks, the
queue fills, and the main thread then blocks forever in ``Queue.put``: during a
repaint, or during shutdown (``disable_input``, ``stop_application_mode``,
``close``). Signals handled through the event loop never run then, so the app
outlived its terminal, ignoring SIGTERM too.

Here:

* :class:`TerminalDriver`: Textual's Linux driver, writing through :class:`Output`,
  whose queue never blocks a writer for good: once the terminal is gone (a write
  failed with EIO or EPIPE, reading it failed, or a hang-up signal came), writes are
  dropped, and stopping it waits a bounded time.
* :class:`Ending`: Python-level handlers for SIGHUP, SIGTERM and SIGINT (they run on
  the main thread even while it is blocked on a lock), and a watchdog thread: on a
  signal or a lost terminal the app is asked to save and exit as ``q`` does, with
  ``128 + signal`` (129 for a hang-up); if that has not ended the process within
  :data:`GRACE_S`, the watchdog saves the learner's progress itself and ends it with
  ``os._exit``. Plugin workers die with the process (their guard reads end of file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from textual.driver import Driver

try:
    from textual.drivers.linux_driver import LinuxDriver
except ImportError:  # Windows: Textual's own driver, and signals as Windows has them
    LinuxDriver = None  # type: ignore[assignment,misc]

HANG_UP = 128 + getattr(signal, "SIGHUP", 1)
"""The exit status when the terminal goes away: 129, as a hang-up."""
GRACE_S = 2.0
"""Seconds the app's own shutdown may take after a signal before the watchdog ends it."""
STOP_WAIT_S = 1.0
"""Seconds closing waits for the output thread to write what is queued."""
QUIT_WAIT_S = 10.0
"""Seconds quitting (``q``) waits for a slow terminal to take the last frames and the
sequences that restore it; past that it counts as gone."""
MAX_QUEUED_WRITES = 30
"""As Textual's own writer: a slow terminal slows the app down rather than fill memory."""
_POLL_S = 0.1
GONE_ERRORS = frozenset({errno.EIO, errno.EPIPE, errno.EBADF, errno.ENXIO, errno.ENODEV})
"""What writing to (or reading from) a terminal that went away fails with."""


class Output(threading.Thread):
    """Textual's ``WriterThread`` (same queue, same flushing), but a writer is never blocked
    for good: once :attr:`gone` is set, writes are dropped."""

    def __init__(self, file: IO[str], lost: Callable[[], None]) -> None:
        super().__init__(daemon=True, name="attn-output")
        self._queue: queue.Queue[str | None] = queue.Queue(MAX_QUEUED_WRITES)
        self._file = file
        self._lost = lost
        self.gone = False
        """The terminal went away: writes are dropped.

        A plain attribute, set from signal handlers, so nothing here takes a lock for it."""
        self.give_up_at: float | None = None
        """A time (``time.monotonic``) after which a write that finds the queue full gives up
        and the terminal counts as gone: the app is ending and nobody reads its output."""

    def write(self, text: str) -> None:
        while not self.gone:
            try:
                self._queue.put(text, timeout=_POLL_S)
                return
            except queue.Full:  # the terminal is slow (or nobody reads it): wait, not for good
                if self.give_up_at is not None and time.monotonic() > self.give_up_at:
                    self.gone = True

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._file.fileno()

    def flush(self) -> None:
        return

    def run(self) -> None:
        write, flush = self._file.write, self._file.flush
        get, qsize = self._queue.get, self._queue.qsize
        try:
            while (text := get()) is not None:
                if self.gone:
                    continue  # drained, unwritten: nobody is there to read it
                write(text)
                if qsize() == 0:
                    flush()
            if not self.gone:
                flush()
        except (OSError, ValueError) as error:
            if isinstance(error, OSError) and error.errno not in GONE_ERRORS:
                self._lost_anyway()
                raise
            self._lost_anyway()

    def _lost_anyway(self) -> None:
        self.gone = True
        self._lost()
        with contextlib.suppress(Exception):  # let a writer waiting on a full queue go
            while True:
                self._queue.get_nowait()

    def stop(self) -> None:
        """Write what is queued, then end the thread: a bounded wait, the shorter when the
        app is ending on a signal (a slow terminal still gets the sequences that restore it
        on a normal quit)."""
        ending = self.gone or self.give_up_at is not None
        if not ending:
            self.give_up_at = time.monotonic() + QUIT_WAIT_S
        if not self.gone:
            self.write(None)  # type: ignore[arg-type]  # the end marker, as Textual's
        if self.gone:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(None)
        self.join(STOP_WAIT_S if ending else QUIT_WAIT_S)


def driver_for(chosen: type[Driver]) -> type[Driver]:
    """The driver to run the app with: ours where Textual would use its Linux driver."""
    if LinuxDriver is not None and chosen is LinuxDriver:
        return TerminalDriver
    return chosen


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, ending the app (exit 129) when the terminal goes away."""

    _output: Output | None = None

    def start_application_mode(self) -> None:
        if self._output is not None:  # resumed after Ctrl+Z: the old thread is done
            self._output.stop()
        self._output = Output(self._file, self._terminal_lost)  # type: ignore[arg-type]
        self._output.start()
        super().start_application_mode()  # type: ignore[no-untyped-call]

    def write(self, data: str) -> None:
        output = self._output
        if output is None:
            super().write(data)
        else:
            output.write(data)

    def close(self) -> None:
        if self._output is not None:
            self._output.stop()
        super().close()

    def abandon(self, after: float = 0.0) -> None:
        """Drop every write from now on, or once writes have waited ``after`` seconds
        more on a full terminal (safe in a signal handler: no lock is taken)."""
        output = self._output
        if output is None:
            return
        if after <= 0:
            output.gone = True
        else:
            output.give_up_at = time.monotonic() + after

    def _terminal_lost(self) -> None:
        self.abandon()
        lost = getattr(self._app, "terminal_lost", None)
        if lost is not None:
            lost()

    def _run_input_thread(self) -> None:
        try:
            self.run_input_thread()
        except OSError as error:
            if error.errno not in GONE_ERRORS:
                raise
            self._terminal_lost()  # reading failed: the terminal is gone
        except BaseException:
            import rich.traceback

            # As Textual's own driver does: the app reports it (and exits 1).
            self._app.call_later(self._app.panic, rich.traceback.Traceback())


class Ending:
    """A signal (or the terminal going away) ends the app: saved, and exited, within
    :data:`GRACE_S` whatever the app's own shutdown does.

    ``abandon(status)`` lets go of the terminal: at once for a hang-up (129), after a
    bounded wait otherwise (SIGTERM leaves a terminal to restore, if it takes the output).
    ``ask_to_exit`` runs on the event loop (through ``call_soon_threadsafe``): it should
    save and exit as ``q`` does. ``save`` saves the learner's progress from the watchdog
    thread, if the app had not by then.
    """

    SIGNALS = ("SIGHUP", "SIGTERM", "SIGINT")

    def __init__(
        self,
        abandon: Callable[[int], None],
        ask_to_exit: Callable[[], None],
        save: Callable[[], None],
    ) -> None:
        self._abandon = abandon
        self._ask_to_exit = ask_to_exit
        self._save = save
        self.status: int | None = None
        """``128 + signal`` once ending (129 for a hang-up or a lost terminal)."""
        self.saved = False
        """Set by the app once it has saved the learner's progress on the way out."""
        self.loop: Any = None
        """The app's event loop, once running (``call_soon_threadsafe`` reaches it)."""
        self._begun = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="attn-ending", daemon=True)
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Handle the signals (main thread only) and start the watchdog, which waits."""
        if threading.current_thread() is not threading.main_thread():
            return
        for name in self.SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._previous[number] = signal.signal(number, self._on_signal)
        self._watchdog.start()

    def uninstall(self) -> None:
        """Put back the handlers that were there before (a test's, or Python's own)."""
        for number, previous in self._previous.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(number, previous)
        self._previous.clear()

    def _on_signal(self, number: int, frame: object) -> None:
        self.begin(128 + number)

    def begin(self, status: int) -> None:
        """Start ending with ``status``; safe in a signal handler and from any thread (it
        takes no lock the interrupted code might hold). A second call changes nothing."""
        if self.status is not None:
            return
        self.status = status
        self._abandon(status)
        loop = self.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._ask_to_exit)
        self._begun.set()

    def _watch(self) -> None:
        self._begun.wait()
        time.sleep(GRACE_S)
        if not self.saved:
            with contextlib.suppress(Exception):
                self._save()
        for stream in (sys.stdout, sys.stderr):  # only what can go without waiting
            with contextlib.suppress(Exception):
                if stream is not None and not stream.isatty():
                    stream.flush()
        os._exit(self.status if self.status is not None else 1)
