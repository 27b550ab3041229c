"""Building and running the app: picker, lesson or explorer (no argparse here).

The command line (:mod:`tracer.cli.app_cmd`) checks its arguments, then calls
these; the app's screens do the heavy loading in a worker after the first frame.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracer.session.explore import explore_loader as explore_loader

if TYPE_CHECKING:
    from tracer.session.explore import TraceOptions
    from tracer.tui.app import TracerApp

FRAME_RATE = 240
"""Textual's cap on repaints a second (its ``TEXTUAL_FPS``, 60 unless set).

A step usually reaches the terminal in two frames: Textual lays the screen out
a second time when a widget changed size, and a scrollbar repaints after the
layout. At 60 the second frame waits up to 16.7 ms for the next tick; at 240
it goes out within about 4 ms. Repaints still happen only when something
changed. Measured by benchmarks/tui_latency.py (README).
"""


def frame_rate() -> None:
    """Raise Textual's frame cap, unless the user set ``TEXTUAL_FPS`` (before Textual loads)."""
    os.environ.setdefault("TEXTUAL_FPS", str(FRAME_RATE))


def make_explore_app(
    variant: str, options: TraceOptions, plugin_dirs: list[str] | tuple[str, ...] = ()
) -> TracerApp:
    frame_rate()
    # Here, not at the top: Textual loads only after frame_rate() has set its cap.
    from tracer.tui.app import TracerApp
    from tracer.tui.explore_screen import ExploreScreen

    return TracerApp(
        lambda: ExploreScreen(
            lambda host: explore_loader(variant, options, plugin_dirs, host), f"explore {variant}"
        ),
        plugin_dirs=plugin_dirs,
    )


def make_lesson_app(
    spec: str | Path,
    *,
    plugin_dirs: list[str] | tuple[str, ...] = (),
    lesson_dirs: list[str] | tuple[str, ...] = (),
    resume: bool = True,
) -> TracerApp:
    frame_rate()
    # Here, not at the top: Textual loads only after frame_rate() has set its cap.
    from tracer.tui.app import TracerApp
    from tracer.tui.lesson_screen import LessonScreen

    return TracerApp(
        lambda: LessonScreen(spec, plugin_dirs=plugin_dirs, lesson_dirs=lesson_dirs, resume=resume),
        plugin_dirs=plugin_dirs,
        lesson_dirs=lesson_dirs,
    )


def make_picker_app(
    *,
    plugin_dirs: list[str] | tuple[str, ...] = (),
    lesson_dirs: list[str] | tuple[str, ...] = (),
) -> TracerApp:
    frame_rate()
    # Here, not at the top: Textual loads only after frame_rate() has set its cap.
    from tracer.tui.app import TracerApp
    from tracer.tui.picker_screen import PickerScreen

    return TracerApp(
        lambda: PickerScreen(plugin_dirs=plugin_dirs, lesson_dirs=lesson_dirs),
        plugin_dirs=plugin_dirs,
        lesson_dirs=lesson_dirs,
    )


def run_app(app: TracerApp) -> int:
    """Run the app; the exit status says how it ended, and the terminal is always restored.

    * SIGTERM, SIGHUP and SIGINT close the app like ``q`` does (see ``TracerApp``), so
      the terminal leaves the alternate screen and mouse tracking, and the status is
      128 + the signal (143, 129, 130). So does the terminal going away (a write or a read
      that fails with EIO): 129. Either way progress is saved and the process ends within
      a bounded time (:mod:`tracer.tui.hangup`), even if Textual's shutdown blocks.
    * A crash (an exception Textual caught and printed) exits 1, never 0.
    * A plugin's variant runs in a worker process, stopped when the app closes. A
      variant running in process (the built-ins, or any with ``ATTN_ISOLATE=off``)
      cannot be interrupted mid-step; once the app has closed and the terminal is
      restored, the process ends without waiting for it.
    """
    # Here, not at the top: Textual loads only after frame_rate() has set its cap.
    import threading

    app.run()
    status = app.exit_status
    if status == 0 and (app.return_code or 0) != 0:
        status = app.return_code or 1
    ending = getattr(app, "ending", None)
    if ending is not None and ending.status is not None:
        # A signal or a lost terminal: nothing more is said (there may be no terminal to
        # say it on, or one that blocks); progress is saved and the process ends now.
        if not ending.saved:
            app.save_progress()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if not stream.isatty():
                    stream.flush()
        os._exit(ending.status)
    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if stuck and any(not t.daemon for t in stuck):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)  # a variant that never returns must not keep the process alive
    return status
