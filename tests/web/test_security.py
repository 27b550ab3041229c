"""attn serve's guards, against a server on 127.0.0.1 only, with bounded waits everywhere."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tracer.serve import session as session_module
from tracer.serve.server import BrowserServer, exposure_warning, is_loopback

WAIT_S = 15.0


def origin(server: BrowserServer) -> str:
    return f"http://127.0.0.1:{server.port}"


async def connect(
    client: aiohttp.ClientSession, server: BrowserServer, **kwargs: Any
) -> aiohttp.ClientWebSocketResponse:
    kwargs.setdefault("origin", origin(server))
    return await client.ws_connect(f"ws://127.0.0.1:{server.port}/{server.token}/ws", **kwargs)


async def wait_ready(websocket: aiohttp.ClientWebSocketResponse) -> None:
    """The stand-in app's first packet reached the page: its process is running."""
    message = await websocket.receive(timeout=WAIT_S)
    assert message.type == aiohttp.WSMsgType.BINARY and message.data == b"ready"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def until(condition: Any, seconds: float = WAIT_S) -> bool:
    """Poll ``condition`` every 50 ms, at most ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return True
        await asyncio.sleep(0.05)
    return bool(condition())


async def test_requests_without_the_token_get_403(start_server: Any) -> None:
    server = await start_server()
    base = f"http://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession() as client:
        for path in ("/", "/ws", "/static/js/textual.js", f"/{server.token[:-1]}/", "/x/static/"):
            async with client.get(base + path) as response:
                assert response.status == 403, path
        async with client.get(f"{base}/{server.token}/") as response:
            assert response.status == 200
            page = await response.text()
            # The token is in the URL: no page may learn it from a Referer header.
            assert response.headers["Referrer-Policy"] == "no-referrer"
            policy = response.headers["Content-Security-Policy"]
            assert policy.startswith("default-src 'self';") and "http" not in policy
        async with client.get(f"{base}/{server.token}/static/js/textual.js") as response:
            assert response.status == 200
    # The page loads nothing from another host: no CDN, no web font service.
    assert "https://" not in page
    assert f"ws://127.0.0.1:{server.port}/{server.token}/ws" in page


async def test_two_servers_get_different_tokens(start_server: Any) -> None:
    first, second = await start_server(), await start_server()
    assert first.token != second.token and len(first.token) >= 32


async def test_a_host_name_other_than_loopback_is_refused(start_server: Any) -> None:
    """A site whose name resolves to 127.0.0.1 (DNS rebinding) still gets 403."""
    server = await start_server()
    async with (
        aiohttp.ClientSession() as client,
        client.get(
            f"http://127.0.0.1:{server.port}/{server.token}/",
            headers={"Host": f"attacker.example:{server.port}"},
        ) as response,
    ):
        assert response.status == 403


@pytest.mark.parametrize("page_origin", ["http://attacker.example", "http://127.0.0.1:1", None])
async def test_websocket_from_another_origin_is_refused(
    start_server: Any, tmp_path: Path, page_origin: str | None
) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as client:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            if page_origin is None:
                await client.ws_connect(f"ws://127.0.0.1:{server.port}/{server.token}/ws")
            else:
                await connect(client, server, origin=page_origin)
    assert refused.value.status == 403
    assert not server.sessions
    assert not (tmp_path / "record.json").exists(), "no app may start for a refused page"


async def test_a_third_session_is_refused_until_one_closes(start_server: Any) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as client:
        first = await connect(client, server)
        second = await connect(client, server)
        await wait_ready(first)
        await wait_ready(second)
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await connect(client, server)
        assert refused.value.status == 503
        async with client.get(f"http://127.0.0.1:{server.port}/{server.token}/") as page:
            assert page.status == 503 and "Close one of them" in await page.text()
        assert len(server.sessions) == 2
        await first.close()
        assert await until(lambda: len(server.sessions) == 1)
        third = await connect(client, server)
        await wait_ready(third)
        await third.close()
        await second.close()


async def test_the_app_is_started_as_an_argument_list_without_a_shell(
    start_server: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "shell-ran"
    hostile = [f"a b; touch {marker}", f"$(touch {marker})", "`id`", "*"]
    server = await start_server(*hostile)
    async with aiohttp.ClientSession() as client:
        websocket = await connect(client, server)
        await wait_ready(websocket)
        await websocket.close()
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["argv"] == hostile
    assert not marker.exists()


@pytest.mark.parametrize("app_args", [(), ("--stubborn",)], ids=["quits", "ignores-quit"])
async def test_closing_the_page_ends_the_app_process(
    start_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, app_args: tuple[str, ...]
) -> None:
    monkeypatch.setattr(session_module, "QUIT_GRACE_S", 0.5)
    monkeypatch.setattr(session_module, "TERMINATE_GRACE_S", 0.5)
    server = await start_server(*app_args)
    async with aiohttp.ClientSession() as client:
        websocket = await connect(client, server)
        await wait_ready(websocket)
        pid = json.loads((tmp_path / "record.json").read_text())["pid"]
        assert alive(pid)
        await websocket.close()
    assert await until(lambda: not server.sessions)
    assert await until(lambda: not alive(pid))


async def test_malformed_messages_are_ignored(start_server: Any) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as client:
        websocket = await connect(client, server)
        await wait_ready(websocket)
        for junk in ("not json", "{}", "[]", '["stdin", 5]', '["resize", {"width": "x"}]'):
            await websocket.send_str(junk)
        await websocket.send_bytes(b"\x00\xff")
        await websocket.send_str('["ping", "still here"]')
        reply = await websocket.receive(timeout=WAIT_S)
        assert json.loads(reply.data) == ["pong", "still here"]
        await websocket.close()


def test_only_loopback_addresses_count_as_this_machine() -> None:
    for host in ("127.0.0.1", "127.8.0.1", "localhost", "::1", "[::1]"):
        assert is_loopback(host) and exposure_warning(host) is None, host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org"):
        assert not is_loopback(host)
        warning = exposure_warning(host)
        assert warning is not None and "reachable" in warning, host


def test_serve_on_all_addresses_warns(attn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning is printed before listening; the test never binds anything but loopback."""
    started: list[str] = []
    monkeypatch.setattr(BrowserServer, "run", lambda self, announce: started.append(self.host))
    status, _, err = attn("serve", "--host", "0.0.0.0", "--port", "0")
    assert status == 0 and started == ["0.0.0.0"]
    assert err.startswith("attn: warning: serving on 0.0.0.0 makes attn reachable")
    status, _, err = attn("serve", "--port", "0")
    assert status == 0 and started[-1] == "127.0.0.1" and err == ""


def test_serve_usage_errors_are_one_line(attn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BrowserServer, "run", lambda self, announce: pytest.fail("must not serve"))
    for argv in (["serve", "no-such-lesson"], ["serve", "--port", "70000"]):
        status, out, err = attn(*argv)
        assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, argv


def test_a_port_in_use_is_a_one_line_error(attn: Any) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = attn("serve", "--port", str(port))
    assert status == 2 and out == ""
    assert err.startswith(f"attn: cannot listen on 127.0.0.1:{port}") and err.count("\n") == 1
