"""Child processes that never outlive the process that started them (Linux)."""

from __future__ import annotations

import contextlib
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``signum`` to this process when its parent dies.

    Called in a child right after fork: even ``kill -9`` of the parent, which runs
    no clean-up of its own, then ends the child. Does nothing off Linux.
    """
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum)
