"""What a move gives back, in both sessions (a lesson's and the explorer's). No Textual.

A move (next, back, a jump, a loop's end) returns one of five results:

- :class:`Moved`: the session is somewhere else; draw its view;
- :class:`AtEnd`: nowhere further that way (the last step going on, the first going back,
  a step that does not exist); the session stayed;
- :class:`Failed`: the variant raised while the move ran it (``error``); see the session for
  where it is now (a lesson stays, the explorer shows the failure in place of the step);
- :class:`Refused`: the move does not apply here (``reason``, in words: "This step is not
  a loop");
- :class:`Waiting`: the move needs work that may take long (running a variant on); its
  :class:`Pending` is run off the drawing thread, then finished on it.

A front end with a user interface asks for moves with ``wait=False`` and runs a
:class:`Waiting` move's :meth:`Pending.run` in a worker (it never learns what the work is);
a text front end asks with ``wait=True`` (the default), which does the work on the spot::

    move = session.next(wait=False)
    if isinstance(move, Waiting):
        move.pending.run(cancelled=..., progress=...)   # in a worker thread
        move = move.pending.finish()                     # back on the drawing thread
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tracer.tracing.stepper import Cancelled

__all__ = ["AtEnd", "Cancelled", "Failed", "Move", "Moved", "Pending", "Refused", "Waiting"]

T = TypeVar("T")


class _Result:
    """A move's result is true exactly when the session moved."""

    @property
    def moved(self) -> bool:
        """Whether the session is somewhere else now."""
        return False

    def __bool__(self) -> bool:
        return bool(self.moved)


@dataclass(frozen=True)
class Moved(_Result):
    """The session moved: draw its view."""

    @property
    def moved(self) -> bool:
        return True


@dataclass(frozen=True)
class AtEnd(_Result):
    """Nowhere further this way: the session stayed."""


@dataclass(frozen=True)
class Failed(_Result):
    """The variant raised while the move ran it."""

    error: BaseException
    moved: bool = False
    """Whether the session's position changed (the explorer steps onto the failure)."""


@dataclass(frozen=True)
class Refused(_Result):
    """The move does not apply here; ``reason`` says why, as a front end shows it."""

    reason: str


@dataclass(frozen=True)
class Waiting(_Result):
    """The move needs work that may take long: run ``pending``, then finish it."""

    pending: Pending[Any]


Move = Moved | AtEnd | Failed | Refused | Waiting
"""What a move returns. Each is true exactly when the session moved (``if session.back():``
reads as it did when moves returned a bool)."""
MOVED = Moved()
AT_END = AtEnd()


class Pending(Generic[T]):
    """Work a move waits for, opaque to the front end: run it, cancel it, watch its progress.

    :meth:`run` does the work (a worker thread's job: it may take long, or never end if a
    plugin hangs); :meth:`finish` then completes the move where the front end draws and
    returns its :class:`Move` (:class:`Waiting` again only where the run turned out to need
    more work).
    """

    def __init__(
        self,
        description: str,
        work: Callable[[Callable[[], bool], Callable[[int], None]], T],
        finish: Callable[[T], Move],
    ) -> None:
        self.description = description
        """What the work does, in words ("Running the loop")."""
        self._work = work
        self._finish = finish
        self._stop = threading.Event()
        self._result: T | None = None
        self._ran = False
        self.done = 0
        """How many steps the work has computed so far (its progress)."""

    def cancel(self) -> None:
        """Stop the work at its next check (:meth:`run` then raises :class:`Cancelled`)."""
        self._stop.set()

    @property
    def cancelled(self) -> bool:
        return self._stop.is_set()

    def run(
        self,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Do the work. ``cancelled``: also stop when it says so; ``progress``: called with
        the steps computed so far, now and then. Raises :class:`Cancelled` when stopped, and
        what the work raised (a plugin's error)."""
        stop = self._stop

        def asked() -> bool:
            return stop.is_set() or (cancelled is not None and cancelled())

        def said(done: int) -> None:
            self.done = done
            if progress is not None:
                progress(done)

        if asked():
            raise Cancelled()
        self._result = self._work(asked, said)
        self._ran = True

    def finish(self) -> Move:
        """Complete the move with what :meth:`run` computed (run first; on the thread that
        draws)."""
        if not self._ran:
            raise RuntimeError("Pending.finish() before run()")
        return self._finish(self._result)  # type: ignore[arg-type]

    def settle(self) -> Move:
        """Run the work here and finish the move: what a text front end does."""
        self.run()
        return self.finish()


def settle(move: Move) -> Move:
    """``move``, with any work it waits for done on the spot (until it no longer waits)."""
    while isinstance(move, Waiting):
        move = move.pending.settle()
    return move
