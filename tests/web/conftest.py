"""A hardened server on 127.0.0.1 (never another address), running a stand-in app."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tracer.serve.server import BrowserServer

FAKE_APP = Path(__file__).parent / "fake_app.py"


@pytest.fixture
async def start_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[..., object]]:
    """``await start_server(*app_args)``: a started server whose app is ``fake_app.py ARGS``."""
    monkeypatch.setenv("ATTN_TEST_RECORD", str(tmp_path / "record.json"))
    servers: list[BrowserServer] = []

    async def start(*app_args: str, max_sessions: int = 2) -> BrowserServer:
        server = BrowserServer(
            [sys.executable, str(FAKE_APP), *app_args],
            host="127.0.0.1",
            port=0,
            max_sessions=max_sessions,
        )
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
