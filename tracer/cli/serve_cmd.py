"""``attn serve [LESSON]``: the app in a web browser, for this machine only unless asked."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracer.errors import EXIT_OK, UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the app in a web browser (for this machine only, unless --host)",
        description=(
            "Serve the app to a web browser: open the URL it prints (it holds a secret "
            "token; requests without it are refused). Each browser tab runs its own app, "
            "at most two at once; closing the tab ends it. Ctrl+C stops the server."
        ),
    )
    parser.add_argument(
        "lesson", nargs="?", metavar="LESSON",
        help="open this lesson (number, name or .yaml path) instead of the lesson picker",
    )  # fmt: skip
    parser.add_argument(
        "--host", default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; "
        "any other address is reachable from the network and prints a warning)",
    )  # fmt: skip
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def app_command(lesson: str | None) -> list[str]:
    """The app each browser session starts: this Python running ``attn``, as an argument list."""
    command = [sys.executable, "-m", "tracer"]
    if lesson is not None:
        command += ["lesson", lesson]
    return command


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    lesson = None
    if args.lesson is not None:
        # The lesson grammar (tens of ms to import) stays off `attn --help`.
        from tracer.lessons.loader import resolve_lesson

        lesson = str(resolve_lesson(args.lesson, []).resolve())
    try:
        # Textual and textual-serve: an optional extra, and never loaded for `attn --help`.
        from tracer.serve.server import BrowserServer, exposure_warning
    except ImportError:
        raise UsageError(
            "attn serve needs textual-serve: pip install 'attention-tracer[serve]'"
        ) from None

    warning = exposure_warning(args.host)
    if warning:
        print(f"attn: warning: {warning}", file=sys.stderr)
    server = BrowserServer(app_command(lesson), host=args.host, port=args.port)

    def announce(url: str) -> None:
        print(f"Open {url} in your browser (Ctrl+C stops the server).", flush=True)

    try:
        server.run(announce)
    except OSError as error:
        reason = error.strerror or str(error)
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
    return EXIT_OK
