"""One browser session: the app's process, started without a shell and always ended."""

from __future__ import annotations

import asyncio
import contextlib
from asyncio.subprocess import Process
from collections.abc import Sequence
from typing import Any

from textual_serve.app_service import AppService

from tracer.processes import die_with_parent

QUIT_GRACE_S = 3.0
"""How long the app gets to quit by itself after the page closed, before it is terminated."""
TERMINATE_GRACE_S = 2.0
"""How long a terminated app gets before it is killed."""


class AppSession(AppService):
    """textual-serve's ``AppService``, but the app is an argument list and ``stop`` is bounded.

    textual-serve runs its command through ``create_subprocess_shell``; here the
    command is a list handed to ``create_subprocess_exec``, so no argument is ever
    read by a shell. Its ``stop`` waits for the app to quit with no time limit; here
    an app that does not quit is terminated, then killed.
    """

    def __init__(self, argv: Sequence[str], **kwargs: Any) -> None:
        super().__init__(" ".join(argv), **kwargs)
        self.argv = tuple(argv)

    @property
    def process(self) -> Process | None:
        return self._process

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            # kill -9 or kill -HUP of the server must not leave its apps running.
            preexec_fn=die_with_parent,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """Ask the app to quit; terminate it, then kill it, if it does not."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            await self.send_meta({"type": "quit"})
            with contextlib.suppress(Exception):
                self.stdin.close()
        for signal_it, grace in ((None, QUIT_GRACE_S), (process.terminate, TERMINATE_GRACE_S)):
            if process.returncode is not None:
                break
            if signal_it is not None:
                with contextlib.suppress(ProcessLookupError):
                    signal_it()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), grace)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        if self._task is not None:
            task, self._task = self._task, None
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(task, TERMINATE_GRACE_S)
