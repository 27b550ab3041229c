"""Python's garbage collector, kept off the frames that answer a key.

A key press that changes the kind of step makes thousands of short-lived objects
(styles, strips, segments); the collector's young generations ran in the middle of
about half of those presses, 1–2 ms each time (``benchmarks/README.md``). So a key
press pauses the collector, and it runs again a little after that key's frame, once
the frame has been written: a collection run straight after the frame (1–3 ms, the
frame's garbage) took the CPU from the thread writing it to the terminal. Loading a
screen freezes what it loaded (torch, the plugins, Textual) so that no full
collection walks those objects on a key press.
"""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen
    from textual.timer import Timer


def collect_before_freezing() -> None:
    """Collect the garbage a load left, so that :func:`freeze_heap` freezes little of it.

    A full collection: called from the loading worker, off the UI thread. A screen
    that is leaving thaws the heap, and the next load's collection reclaims what
    that screen held.
    """
    gc.collect()


def freeze_heap() -> None:
    """Exclude everything loaded so far (torch, the plugins, Textual) from garbage collection.

    A full collection over torch's many objects took over 100 ms, landing on a
    random key press; after loading, those objects live as long as the app. The
    loading workers collect first (off the UI thread), so little garbage is frozen.
    """
    gc.freeze()


def thaw_heap() -> None:
    """Let the collector see the heap again: a screen that froze it is leaving."""
    gc.unfreeze()


RESUME_AFTER_S = 0.25
"""The collector runs again at the latest this long after a key (a key that drew nothing)."""
RESUME_AFTER_FRAME_S = 0.04
"""...and this long after the key's frame: time for the output thread to write the frame
(a few milliseconds) first, short enough that a collection rarely meets the next key."""


class CollectAfterFrames:
    """Pauses the collector while the app answers a key; resumes it after the frame.

    The app pauses it as a key arrives; the screen that draws the key's step asks
    for the resume after its frame (:meth:`after_frame`), and a timer resumes it in
    any case. A key that arrives while it is paused keeps it paused until that key's
    own frame, within the same limit from the pause's start (keys held down do not keep
    it off for good). Only a pause this object made is undone: code that turned the
    collector off itself (a profiler, a test) keeps it off.
    """

    def __init__(self) -> None:
        self._timer: Timer | None = None
        self._keys = 0
        """Keys seen: a frame's resume applies only if no key came after it."""
        self._since = 0.0
        """When the pause began (``time.monotonic``): keys in a row never hold it past
        ``RESUME_AFTER_S`` from then."""

    @property
    def paused(self) -> bool:
        return self._timer is not None

    def key_pressed(self, app: App[Any]) -> None:
        """A key arrived: no collection until its frame is drawn."""
        self._keys += 1
        if self.paused:
            # Not on the resume the last key's frame asked for, in the middle of this key;
            # but no later than the pause's own limit.
            left = RESUME_AFTER_S - (time.monotonic() - self._since)
            if left <= 0:
                self.resume()
            else:
                self._resume_in(app, left)
            return
        if not gc.isenabled():
            return
        gc.disable()
        self._since = time.monotonic()
        self._timer = app.set_timer(RESUME_AFTER_S, self.resume, name="collect-after-frame")

    def after_frame(self, screen: Screen[Any]) -> None:
        """``screen`` has drawn what the key changed: resume once that is on screen."""
        if self.paused:
            keys = self._keys
            screen.call_after_refresh(self._resume_in, screen.app, RESUME_AFTER_FRAME_S, keys)

    def _resume_in(self, app: App[Any], seconds: float, keys: int | None = None) -> None:
        """Move a pause's end to ``seconds`` from now (nothing to do once resumed, nor for a
        frame that a later key has made out of date)."""
        if self._timer is None or (keys is not None and keys != self._keys):
            return
        self._timer.stop()
        self._timer = app.set_timer(seconds, self.resume, name="collect-after-frame")

    def resume(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.stop()
            gc.enable()


COLLECTOR = CollectAfterFrames()
"""The one collector pause of the process (the collector is the process's)."""
