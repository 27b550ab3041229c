"""Saving off the UI thread: bursts coalesce, the latest position wins, flushing loses nothing.

The saves here are gated with events (never timed): a save is held on disk's behalf
while the test makes more moves, then let go.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tracer.lessons.loader import load_lesson, resolve_lesson
from tracer.plugin_host import PluginHost
from tracer.session.lesson import Position, start_session
from tracer.session.progress import ProgressStore
from tracer.session.saver import BackgroundSaver


class HeldSaves:
    """A save that records the value it reads when it runs, held until let go."""

    def __init__(self) -> None:
        self.value = 0
        self.saved: list[int] = []
        self.started = threading.Event()
        self.go_on = threading.Event()
        self.threads: set[str] = set()

    def __call__(self) -> str | None:
        self.threads.add(threading.current_thread().name)
        value = self.value
        self.started.set()
        assert self.go_on.wait(10), "the test never let the save go on"
        self.saved.append(value)
        return None


def test_a_burst_of_moves_coalesces_and_the_last_position_is_saved() -> None:
    save = HeldSaves()
    saver = BackgroundSaver(save, lambda warning: None)
    save.value = 1
    saver.request()
    assert save.started.wait(10)  # the first save runs on the writer thread, held
    for value in range(2, 30):  # moves while the disk is busy
        save.value = value
        saver.request()
    assert saver.pending
    save.go_on.set()
    saver.flush()
    assert not saver.pending
    assert save.saved[-1] == 29  # the last position, whatever ran in between
    assert save.saved == sorted(save.saved)  # never an older one after a newer one
    assert len(save.saved) <= 2  # 29 requests: the one held, then at most one more
    assert "attn-progress-saver" in save.threads


def test_closing_flushes_a_pending_save_and_later_requests_save_nothing() -> None:
    save = HeldSaves()
    save.go_on.set()
    saver = BackgroundSaver(save, lambda warning: None)
    save.value = 7
    saver.request()
    saver.close()  # the way out: on disk when close returns
    assert save.saved[-1] == 7
    count = len(save.saved)
    save.value = 8
    saver.request()
    saver.flush()
    assert len(save.saved) == count


def test_flushing_waits_for_the_save_in_progress() -> None:
    save = HeldSaves()
    saver = BackgroundSaver(save, lambda warning: None)
    save.value = 3
    saver.request()
    assert save.started.wait(10)
    flushed = threading.Event()

    def flush() -> None:
        saver.flush()
        flushed.set()

    flusher = threading.Thread(target=flush)
    flusher.start()
    assert not flushed.wait(0.05)  # still held: flush has not returned
    save.go_on.set()
    flusher.join(10)
    assert flushed.is_set() and save.saved == [3]


def test_a_refused_save_is_said_and_a_raising_one_does_not_stop_the_writer() -> None:
    said: list[str] = []
    results = iter([RuntimeError("disk gone"), "could not save progress to x: full", None])

    def save() -> str | None:
        result = next(results)
        if isinstance(result, Exception):
            raise result
        return result

    saver = BackgroundSaver(save, said.append)
    for _ in range(3):
        saver.request()
        saver.flush()
    saver.close()
    assert said == ["could not save progress: disk gone", "could not save progress to x: full"]


def test_a_lesson_saved_in_the_background_resumes_at_the_last_move(
    host: PluginHost, data_dir: Path
) -> None:
    path = resolve_lesson("dot_products")
    session = start_session(load_lesson(path, host), host, path)
    session.attach(ProgressStore())
    saver = BackgroundSaver(session.save, lambda warning: None)
    for number in range(len(session.steps)):  # a burst of → presses, each asking to save
        assert session.go(Position(number))
        saver.request()
    saver.close()
    saved = ProgressStore().get(session.key)  # what a restart reads from disk
    assert saved is not None
    assert (saved.step, saved.sub) == (len(session.steps) - 1, 0)
