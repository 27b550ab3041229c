"""The one process-isolation module: forked children, their status, their group, messages."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
from typing import Any

import pytest

from tracer import processes
from tracer.processes import (
    Child,
    Refused,
    channel_pair,
    descendants,
    reap,
    start_child,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks: Linux only")


def _exits(code: object) -> None:
    raise SystemExit(code)


def _raises() -> None:
    raise RuntimeError("boom")


def _killed_by(signum: int) -> None:
    os.kill(os.getpid(), signum)


def test_a_childs_exit_status_is_what_it_ended_with() -> None:
    cases: list[tuple[Any, tuple[Any, ...], int]] = [
        (lambda: None, (), 0),
        (_exits, (3,), 3),
        (_exits, (None,), 0),
        (_exits, ("a message",), 1),
        (_raises, (), 1),
        (_killed_by, (signal.SIGTERM,), -signal.SIGTERM),
    ]
    for target, args, expected in cases:
        child = start_child(target, *args)
        child.join(30)
        assert child.exitcode == expected, target


def test_a_child_does_not_run_its_parents_stop_handlers() -> None:
    """A parent that handles SIGTERM itself (the app saves and closes) forks children that a
    SIGTERM ends as the system would, not by running the parent's handler."""
    before = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        child = start_child(_killed_by, signal.SIGTERM)
        child.join(30)
        assert child.exitcode == -signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_child_has_a_process_group_of_its_own() -> None:
    read, write = os.pipe()

    def report() -> None:
        os.write(write, f"{os.getpgid(0)} {os.getsid(0)}".encode())

    child = start_child(report)
    os.close(write)
    group, session = map(int, os.read(read, 100).split())
    os.close(read)
    child.join(30)
    assert group == child.pid and group != os.getpgid(0)
    assert session == os.getsid(0)  # a group, not a session, unless asked

    read, write = os.pipe()
    child = start_child(report, session=True)
    os.close(write)
    group, session = map(int, os.read(read, 100).split())
    os.close(read)
    child.join(30)
    assert group == session == child.pid


def test_killing_a_childs_group_ends_what_it_started() -> None:
    read, write = os.pipe()

    def starts_a_grandchild() -> None:
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(60)
            os._exit(0)
        os.write(write, str(grandchild).encode())
        time.sleep(60)

    child = start_child(starts_a_grandchild)
    os.close(write)
    grandchild = int(os.read(read, 100))
    os.close(read)
    assert grandchild in descendants(os.getpid())
    child.kill_group()
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while _running(grandchild) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running(grandchild)  # killed with the group, not left sleeping


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_status_collected_by_reap_is_still_the_childs() -> None:
    child = start_child(_exits, 5)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reap()  # a subreaper's sweep: it may collect this child first
        if child.pid in processes.reaped:
            break
        time.sleep(0.01)
    assert child.exitcode == 5
    assert not child.is_alive()


def test_a_new_child_object_for_a_gone_pid_is_not_alive() -> None:
    child = start_child(lambda: None)
    child.join(30)
    assert not Child(child.pid).is_alive()  # no longer ours: never waits forever


class _Allowed(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return super().find_class(module, name)
        raise Refused(f"{module}.{name}")


def test_the_channel_builds_only_what_its_reader_allows() -> None:
    import collections

    parent, child = channel_pair()
    try:
        child.send(("plain", [1, 2], {"a": b"bytes"}, bytearray(b"x" * 100_000)))
        assert parent.receive(_Allowed) == ("plain", [1, 2], {"a": b"bytes"}, b"x" * 100_000)
        child.send(collections.OrderedDict(a=1))
        assert parent.receive(_Allowed) == {"a": 1}
        child.send(os.getcwd)  # a call the reader does not allow is never made
        with pytest.raises(Refused, match=r"posix\.getcwd"):
            parent.receive(_Allowed)
        child.send_bytes(b"not a pickle")
        with pytest.raises(Refused, match="unreadable message"):
            parent.receive(_Allowed)
    finally:
        parent.close()
        child.close()
