"""The app ends when its terminal goes away, whatever it is doing: progress saved, exit 129,
no process left behind.

Each test runs ``attn`` on a pseudo-terminal (its controlling terminal), brings it to a
state (the picker loading, a lesson with the help open, a quiz being typed in, a plugin's
worker running, the terminal's output full because nobody reads it), then closes the
terminal's other side: the kernel hangs it up (SIGHUP, and EIO on every write). The app
must have exited by a bounded wait, with status 129 (143 for SIGTERM), and the lesson's
position must be in the progress file.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from tracer.processes import descendants

EXIT_S = 30.0
"""The bound on the app's exit after the hang-up (its watchdog ends it after 2 s)."""
SHOWN_S = 90.0
"""The bound on waiting for something to be on screen (torch and the app load first)."""

KEYS = {"right": "\x1b[C", "left": "\x1b[D", "tab": "\t"}

LESSON = """\
title: Hang-up lesson
summary: Three steps and a quiz.
steps:
  - narration: Aardvark.
  - narration: Bison.
  - narration: Capybara.
  - quiz:
      id: sum
      question: Dromedary, what is one and two?
      answer: 3
"""

HANGING_PLUGIN = """\
import time

from tracer import RunContext, Variant, hookimpl, stage


def sleepy(run: RunContext):
    time.sleep(600)  # a variant still computing when the terminal goes
    yield stage("inputs", "Inputs", axes=("token", "feature"), inputs=run.inputs)


@hookimpl
def register_variants(register):
    register(Variant("sleepy", "Sleeps", sleepy, stages=("inputs",), uses_weights=False))
"""

WORKER_LESSON = """\
title: Worker lesson
summary: A step whose variant is still running.
steps:
  - show: {variant: sleepy, stage: inputs}
"""


def _started_on_terminal(
    argv: tuple[str, ...], cwd: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """``python -m tracer ARGV`` on a 120x40 pseudo-terminal that is its controlling terminal.

    A fresh interpreter, not a fork of the test process: forked from a worker that had run
    other app tests first, the app's help dialog did not open (state of the test process the
    fork inherits), and that is not what a learner's terminal runs."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))

    def controlling_terminal() -> None:  # after start_new_session's setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tracer", *argv],
            cwd=cwd,
            env=env,
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
    finally:
        os.close(secondary)
    return process, primary


class Terminal:
    """The other side of the app's pseudo-terminal: what it showed, and keys to press."""

    def __init__(self, *argv: str, home: Path, data: Path, **more: str) -> None:
        # A plain shell's environment, not the test worker's: started with the worker's
        # environment under pytest-xdist, the app's help never opened on '?' (which variable
        # does it is not yet known; the app test of '?' itself runs in process).
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "ATTN_DATA_DIR": str(data),
            **more,
        }
        self.process, self.fd = _started_on_terminal(argv, home, env)
        self.output = b""
        self.open = True

    def read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                self.output += os.read(self.fd, 65536)
            except OSError as error:
                assert error.errno == errno.EIO
                raise AssertionError(f"the app ended early: {self.output[-400:]!r}") from None

    def shows(self, marker: str) -> None:
        deadline = time.monotonic() + SHOWN_S
        while marker.encode() not in self.output:
            assert time.monotonic() < deadline, f"{marker!r} never shown: {self.output[-400:]!r}"
            self.read(0.1)

    def press(self, *keys: str) -> None:
        for key in keys:
            os.write(self.fd, KEYS.get(key, key).encode())

    def hang_up(self) -> None:
        os.close(self.fd)
        self.open = False

    def ended(self) -> int:
        """The exit status, once the app has exited (killed, and a failure, past EXIT_S)."""
        try:
            return self.process.wait(EXIT_S)
        except BaseException:
            self.process.kill()
            self.process.wait(EXIT_S)
            raise

    def close(self) -> None:
        if self.open:
            self.hang_up()
        self.process.kill()
        self.process.wait(EXIT_S)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "lesson.yaml").write_text(LESSON, encoding="utf-8")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "sleepy.py").write_text(HANGING_PLUGIN, encoding="utf-8")
    (tmp_path / "worker.yaml").write_text(WORKER_LESSON, encoding="utf-8")
    return tmp_path


def saved_step(data: Path, lesson: Path) -> int | None:
    path = data / "progress.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))["lessons"].get(str(lesson.resolve()))
    return None if record is None else int(record["step"])


def none_left(pids: list[int]) -> bool:
    """Whether every one of ``pids`` has ended (a bounded wait for the last of them)."""
    deadline = time.monotonic() + EXIT_S
    while time.monotonic() < deadline:
        living = [pid for pid in pids if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
        if not living:
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def test_the_picker_hung_up_while_loading_exits_129(home: Path, tmp_path: Path) -> None:
    terminal = Terminal(home=home, data=tmp_path / "data")
    try:
        terminal.shows("\x1b[?1049h")  # the app has taken the screen; the picker is loading
        terminal.hang_up()
        assert terminal.ended() == 129
    finally:
        terminal.close()


def test_a_lesson_hung_up_with_the_help_open_saves_and_exits_129(
    home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    terminal = Terminal("lesson", "lesson.yaml", home=home, data=data)
    try:
        terminal.shows("Aardvark")
        terminal.press("right")
        terminal.shows("Bison")
        terminal.press("right")
        terminal.shows("Capybara")
        terminal.press("?")
        terminal.shows("closes this help")
        terminal.hang_up()
        assert terminal.ended() == 129
    finally:
        terminal.close()
    assert saved_step(data, home / "lesson.yaml") == 2


def test_a_quiz_being_typed_in_when_hung_up_saves_and_exits_129(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    terminal = Terminal("lesson", "lesson.yaml", home=home, data=data)
    try:
        terminal.shows("Aardvark")
        terminal.press("right", "right", "right")
        terminal.shows("Dromedary")
        terminal.press("1", "2")  # typed into the answer box, not yet checked
        terminal.hang_up()
        assert terminal.ended() == 129
    finally:
        terminal.close()
    assert saved_step(data, home / "lesson.yaml") == 3


def test_a_running_worker_ends_with_the_app(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    terminal = Terminal(
        "lesson",
        "worker.yaml",
        "--plugins-dir",
        "plugins",
        home=home,
        data=data,
        ATTN_STEP_TIMEOUT="600",  # still running when the terminal goes
    )
    try:
        # Opening the lesson runs its variants: the lesson is loading, its worker running.
        deadline = time.monotonic() + SHOWN_S
        below = descendants(terminal.process.pid)
        while len(below) < 2:  # the worker's guard, and the worker
            assert time.monotonic() < deadline, "no worker process started"
            terminal.read(0.05)
            below = descendants(terminal.process.pid)
        terminal.hang_up()
        assert terminal.ended() == 129
    finally:
        terminal.close()
    assert none_left(below), "a worker process outlived the app"


def pending(fd: int) -> int:
    """Bytes the app wrote that nobody has read yet."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


@pytest.mark.parametrize(("how", "status"), [("hang-up", 129), ("SIGTERM", 143)])
def test_the_app_blocked_on_a_full_terminal_still_ends(
    home: Path, tmp_path: Path, how: str, status: int
) -> None:
    data = tmp_path / "data"
    terminal = Terminal("lesson", "lesson.yaml", home=home, data=data)
    try:
        terminal.shows("Aardvark")
        # Nobody reads from here on: each repaint adds to the terminal's output until it is
        # full and the app's writes block (which hung Textual's writer thread for good).
        last, steady = -1, 0
        for presses in range(2000):
            terminal.press("right" if presses % 2 == 0 else "left")
            now = pending(terminal.fd)
            steady = steady + 1 if now == last else 0
            last = now
            if steady >= 200:  # many key presses and not a byte more: the output is full
                break
            time.sleep(0.005)
        assert steady >= 200, "the terminal's output never filled"
        terminal.press("right")  # the step it ends on
        if how == "hang-up":
            terminal.hang_up()
        else:
            os.kill(terminal.process.pid, signal.SIGTERM)
        assert terminal.ended() == status
    finally:
        terminal.close()
    assert saved_step(data, home / "lesson.yaml") in (0, 1)  # saved: its last position


class GoneTerminal:
    """A terminal's stream after a hang-up: every write fails with EIO."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def fileno(self) -> int:
        return 1


def test_a_write_failing_with_eio_counts_as_a_hang_up_and_writes_never_block() -> None:
    from tracer.tui.hangup import MAX_QUEUED_WRITES, Output

    lost = threading.Event()
    output = Output(GoneTerminal(), lost.set)  # type: ignore[arg-type]
    output.start()
    finished = threading.Event()

    def write_a_lot() -> None:
        for _ in range(MAX_QUEUED_WRITES * 10):  # far more than the queue holds
            output.write("\x1b[2J frame")
        output.stop()
        finished.set()

    threading.Thread(target=write_a_lot, daemon=True).start()
    assert lost.wait(30), "the failed write was not reported"
    assert finished.wait(30), "a writer blocked on the queue of a terminal that is gone"
    assert output.gone


def test_a_full_terminal_is_given_up_on_once_the_app_is_ending() -> None:
    from tracer.tui.hangup import MAX_QUEUED_WRITES, Output

    blocked = threading.Event()

    class Full(GoneTerminal):
        def write(self, text: str) -> int:
            blocked.wait()  # nobody reads the terminal: the write never returns
            return len(text)

    output = Output(Full(), lambda: None)  # type: ignore[arg-type]
    output.start()
    try:
        finished = threading.Event()
        output.give_up_at = time.monotonic()  # ending: writes wait no more

        def write_a_lot() -> None:
            for _ in range(MAX_QUEUED_WRITES * 10):
                output.write("frame")
            finished.set()

        threading.Thread(target=write_a_lot, daemon=True).start()
        assert finished.wait(30), "a writer blocked on a full terminal while the app ends"
        assert output.gone
    finally:
        blocked.set()


async def test_ending_saves_a_move_the_screen_had_not_saved_yet(
    tmp_path: Path, data_dir: Path
) -> None:
    from tracer.session.lesson import LessonSession, Position
    from tracer.tui.launch import make_lesson_app

    from .conftest import settle

    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(LESSON, encoding="utf-8")
    app = make_lesson_app(lesson, resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session = getattr(app.screen, "session", None)
        assert isinstance(session, LessonSession)
        session.go(Position(2))  # moved (by a key the app had no time to draw): not saved
        assert saved_step(data_dir, lesson) != 2
        app.ending.begin(129)  # what the SIGHUP handler does
        for _ in range(200):
            if app.return_code is not None:
                break
            await pilot.pause()
    assert app.return_code == 129 and app.exit_status == 129
    assert saved_step(data_dir, lesson) == 2


def test_the_watchdog_saves_and_ends_a_process_whose_main_thread_never_returns(
    tmp_path: Path,
) -> None:
    from tracer.tui.hangup import Ending

    marker = tmp_path / "saved"
    pid = os.fork()
    if pid == 0:  # the child: a main thread blocked for good, as in Textual's full queue
        try:
            ending = Ending(lambda status: None, lambda: None, lambda: marker.write_text("yes"))
            ending.install()
            os.kill(os.getpid(), signal.SIGHUP)
            stuck = threading.Lock()
            stuck.acquire()
            stuck.acquire()  # never returns: only the watchdog can end this process
        finally:
            os._exit(70)
    deadline = time.monotonic() + EXIT_S
    while not (done := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("the watchdog did not end the process")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(done[1]) == 129
    assert marker.read_text() == "yes"
