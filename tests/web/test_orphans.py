"""Killing attn serve (kill -9, kill -HUP) ends its app sessions; odd Host headers and IPv6
wildcards get an answer, not a traceback. Servers here listen on 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tracer.serve.server import BrowserServer

FAKE_APP = Path(__file__).parent / "fake_app.py"
WAIT_S = 20.0

SERVER = """\
import asyncio, sys
from tracer.serve.server import BrowserServer

async def main():
    server = BrowserServer([sys.executable, sys.argv[1], "--stubborn"], host="127.0.0.1", port=0)
    await server.start()
    print(server.port, server.token, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may not reap what it inherits)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP])
def test_killing_the_server_ends_its_app_sessions(tmp_path: Path, signum: int) -> None:
    record = tmp_path / "record.json"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(FAKE_APP)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "ATTN_TEST_RECORD": str(record)},
    )
    try:
        assert server.stdout is not None
        port, token = server.stdout.readline().split()
        app = asyncio.run(
            asyncio.wait_for(
                kill_during_session(server, int(port), token, record, signum), 3 * WAIT_S
            )
        )
        assert not running(app), "the app session outlived attn serve"
    finally:
        server.kill()
        server.wait(WAIT_S)


async def kill_during_session(
    server: subprocess.Popen[str], port: int, token: str, record: Path, signum: int
) -> int:
    """Open a session, kill the server while it runs, and wait (bounded) for the app to end.

    The stand-in app ignores SIGTERM and its input, so only the server's death can end it.
    """
    async with aiohttp.ClientSession() as client:
        websocket = await client.ws_connect(
            f"ws://127.0.0.1:{port}/{token}/ws", origin=f"http://127.0.0.1:{port}"
        )
        message = await websocket.receive(timeout=WAIT_S)
        assert message.type == aiohttp.WSMsgType.BINARY and message.data == b"ready"
        app = int(json.loads(record.read_text())["pid"])
        assert running(app)
        server.send_signal(signum)
        deadline = time.monotonic() + WAIT_S
        while running(app) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        with contextlib.suppress(Exception):
            await websocket.close()
    return app


@pytest.mark.parametrize("host", ["[::1", "a b", "[", "%%%"])
async def test_a_malformed_host_header_with_the_token_is_refused_not_a_500(
    start_server: object, host: str
) -> None:
    server = await start_server()  # type: ignore[operator]
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        f"GET /{server.token}/ HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    )
    await writer.drain()
    status = (await asyncio.wait_for(reader.readline(), WAIT_S)).decode()
    writer.close()
    assert status.split()[1] in ("400", "403"), status


def test_the_url_for_the_ipv6_wildcard_is_one_that_connects() -> None:
    server = BrowserServer(["true"], host="::", port=8123, token="t")
    assert server.url == "http://[::1]:8123/t/"
    assert BrowserServer(["true"], host="0.0.0.0", port=1, token="t").url == (
        "http://127.0.0.1:1/t/"
    )
