"""Single key presses from a terminal, for ``attn exercises watch`` (h, r, Enter, s, l, q).

The terminal is put in cbreak mode (keys arrive one at a time, Ctrl-C still
interrupts) only while the watcher runs, and restored on every way out.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import termios
import tty
from types import TracebackType
from typing import Any, TextIO


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


class TerminalKeys:
    """``with TerminalKeys() as keys: keys(0.5)`` -> the key pressed within 0.5 s, or None."""

    def __init__(self, stream: TextIO = sys.stdin) -> None:
        self.fd = stream.fileno()
        self._saved: list[Any] | None = None
        self._previous: Any = signal.SIG_DFL

    def __enter__(self) -> TerminalKeys:
        self._saved = termios.tcgetattr(self.fd)
        # SIGTERM ends the watcher through __exit__, so the terminal is restored then too.
        self._previous = signal.signal(signal.SIGTERM, _terminate)
        tty.setcbreak(self.fd)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None
            signal.signal(signal.SIGTERM, self._previous)

    def __call__(self, timeout: float) -> str | None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return None
        data = os.read(self.fd, 1)
        return data.decode("utf-8", errors="replace") if data else None

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question; anything but y (or no answer within a minute) is no."""
        print(question, flush=True)
        return self(60.0) in ("y", "Y")
