"""Python's garbage collector, kept off the frames that answer a key.

A key press that changes the kind of step makes thousands of short-lived objects
(styles, strips, segments); the collector's young generations ran in the middle of
about half of those presses, 1–2 ms each time (``benchmarks/README.md``). So a key
press pauses the collector, and it runs again once that key's frame is on screen,
when the app is idle. Loading a screen freezes what it loaded (torch, the plugins,
Textual) so that no full collection walks those objects on a key press.
"""

from __future__ import annotations

import gc
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


class CollectAfterFrames:
    """Pauses the collector while the app answers a key; resumes it after the frame.

    The app pauses it as a key arrives; the screen that draws the key's step asks
    for the resume after its frame (:meth:`after_frame`), and a timer resumes it in
    any case. Only a pause this object made is undone: code that turned the
    collector off itself (a profiler, a test) keeps it off.
    """

    def __init__(self) -> None:
        self._timer: Timer | None = None

    @property
    def paused(self) -> bool:
        return self._timer is not None

    def key_pressed(self, app: App[Any]) -> None:
        """A key arrived: no collection until its frame is drawn."""
        if self.paused or not gc.isenabled():
            return
        gc.disable()
        self._timer = app.set_timer(RESUME_AFTER_S, self.resume, name="collect-after-frame")

    def after_frame(self, screen: Screen[Any]) -> None:
        """``screen`` has drawn what the key changed: resume once that is on screen."""
        if self.paused:
            screen.call_after_refresh(self.resume)

    def resume(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.stop()
            gc.enable()


COLLECTOR = CollectAfterFrames()
"""The one collector pause of the process (the collector is the process's)."""
