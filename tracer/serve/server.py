"""The web server: textual-serve's static files and app sessions, behind a token and an origin check.

Every path starts with the secret token (``http://127.0.0.1:8000/TOKEN/``);
any other request gets 403 before it reaches a handler. The websocket that
starts an app process also needs an ``Origin`` equal to the page's own, so a
page from another site (or another port on the same machine) cannot start one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.download_manager import DownloadManager
from yarl import URL

from tracer.sanitize import message as one_line
from tracer.serve.page import render_page
from tracer.serve.session import AppSession

MAX_SESSIONS = 2
"""App processes at once; each one holds torch (about 450 MB)."""
MAX_MESSAGE_BYTES = 64 * 1024
"""Largest websocket message accepted from a page (key presses and resizes are tiny)."""
MAX_CELLS = 1000
"""Largest terminal width or height a page may ask for."""
STATIC_DIR = Path(textual_serve.__file__).parent / "static"
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str | None:
    """The warning to print when ``host`` makes the server reachable from other machines."""
    if is_loopback(host):
        return None
    where = "every network this machine is on" if host in WILDCARD_HOSTS else host
    return (
        f"serving on {host or 'all addresses'} makes attn reachable from {where}; "
        "anyone who learns the URL (with its token) can run lessons and plugins on this machine"
    )


def _host_name(header: str) -> str:
    """The name in a Host header, or "" for one that is not a host (refused as unknown)."""
    try:
        return URL(f"http://{header}").host or ""
    except ValueError:
        return ""


def _clamp(value: object, default: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        return default
    return max(1, min(MAX_CELLS, number))


class _OneLine(logging.Handler):
    """aiohttp's report of a request it refused (a 100 KB request line: it answers 400), as
    one sanitised line on stderr instead of its traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        text = f"{type(error).__name__}: {error}" if error is not None else record.getMessage()
        first = text.strip().splitlines()[0] if text.strip() else "a bad request"
        with contextlib.suppress(Exception):
            sys.stderr.write(one_line(f"attn serve: refused a request: {first}") + "\n")


def quiet_request_errors() -> None:
    """Route aiohttp's request errors through :class:`_OneLine` (once)."""
    logger = logging.getLogger("aiohttp.server")
    if not any(isinstance(handler, _OneLine) for handler in logger.handlers):
        logger.addHandler(_OneLine())
        logger.propagate = False


class BrowserServer:
    """Serve the app started by ``argv`` to at most ``max_sessions`` browser tabs at once."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        max_sessions: int = MAX_SESSIONS,
        token: str | None = None,
        title: str = "attention-tracer",
    ) -> None:
        self.argv = tuple(argv)
        self.host = host
        self.port = port
        self.max_sessions = max_sessions
        self.token = token or secrets.token_urlsafe(24)
        self.title = title
        self.sessions: set[AppSession] = set()
        self._downloads = DownloadManager()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        """The URL to open, token included (``port`` is the real one once started)."""
        # "::" listens on IPv6 only (asyncio sets IPV6_V6ONLY), so 127.0.0.1 would be refused.
        host = "::1" if self.host == "::" else self.host
        host = "127.0.0.1" if host in WILDCARD_HOSTS else host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}/{self.token}/"

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        prefix = f"/{self.token}"
        app.add_routes(
            [
                web.get(f"{prefix}/", self._handle_page),
                web.get(f"{prefix}/ws", self._handle_websocket),
                web.static(f"{prefix}/static", STATIC_DIR),
            ]
        )
        return app

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        segment = request.raw_path.split("?", 1)[0].split("/")[1:2]
        if not segment or not hmac.compare_digest(segment[0].encode(), self.token.encode()):
            raise web.HTTPForbidden(text="forbidden: this URL needs the token 'attn serve' printed")
        if is_loopback(self.host) and not is_loopback(_host_name(request.host)):
            # A page whose name resolves to 127.0.0.1 (DNS rebinding) is still another site.
            raise web.HTTPForbidden(text="forbidden: unknown Host")
        response = await handler(request)
        response.headers["Referrer-Policy"] = "no-referrer"  # the URL holds the token
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response

    async def _handle_page(self, request: web.Request) -> web.Response:
        if len(self.sessions) >= self.max_sessions:
            # Say so on the page: a refused websocket only shows the page as "ended".
            return web.Response(
                status=503,
                text=f"attn is already open in {len(self.sessions)} tabs, the most it runs at "
                "once. Close one of them, then reload this page.",
            )
        base = f"/{self.token}/"
        websocket_url = f"ws://{request.host}{base}ws"
        page = render_page(
            self.title, f"{base}static/", websocket_url, _clamp(request.query.get("fontsize"), 16)
        )
        response = web.Response(text=page, content_type="text/html")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'self'; connect-src 'self' {websocket_url}; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
            "frame-ancestors 'none'"
        )
        return response

    async def _handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        origin = request.headers.get("Origin")
        if origin != f"http://{request.host}":
            raise web.HTTPForbidden(text="forbidden: websocket from another origin")
        if len(self.sessions) >= self.max_sessions:
            raise web.HTTPServiceUnavailable(
                text=f"at most {self.max_sessions} sessions at once; close another tab first"
            )
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE_BYTES)
        session = AppSession(
            self.argv,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self._downloads,
        )
        self.sessions.add(session)  # counted from now on: no await since the check above
        try:
            await websocket.prepare(request)
            width = _clamp(request.query.get("width"), 80)
            height = _clamp(request.query.get("height"), 24)
            await session.start(width, height)
            if session._task is not None:  # the app ended by itself: end the page's session too
                session._task.add_done_callback(lambda _: asyncio.ensure_future(websocket.close()))
            await self._relay(websocket, session)
        finally:
            await session.stop()
            self.sessions.discard(session)
        return websocket

    async def _relay(self, websocket: web.WebSocketResponse, session: AppSession) -> None:
        """Pass the page's key presses and resizes to the app; ignore anything malformed."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await session.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                width, height = _clamp(data.get("width"), 80), _clamp(data.get("height"), 24)
                await session.set_terminal_size(width, height)
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await session.blur()
            elif kind == "focus":
                await session.focus()

    async def start(self) -> str:
        """Listen; returns the URL to open (with the real port when ``port`` was 0)."""
        quiet_request_errors()
        self._runner = web.AppRunner(self.make_app(), handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        address = self._runner.addresses[0]
        self.port = int(address[1])
        return self.url

    async def stop(self) -> None:
        """End every session's app, then stop listening."""
        await asyncio.gather(*(session.stop() for session in list(self.sessions)))
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def run(self, announce: Callable[[str], None]) -> None:
        """Serve until Ctrl+C or SIGTERM; ``announce`` receives the URL once listening."""
        asyncio.run(self._serve_forever(announce))

    async def _serve_forever(self, announce: Callable[[str], None]) -> None:
        announce(await self.start())
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, stopped.set)
        try:
            await stopped.wait()
        finally:
            await self.stop()
