"""``attn``: the command-line entry point.

Each sub-command lives in its own module and registers itself with
``add_parser(subparsers)``; this module only parses, dispatches, and turns
every error a user can cause into one line on stderr and an exit status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from tracer import __version__
from tracer.cli.encoding import use_ascii_fallback
from tracer.errors import EXIT_INTERRUPTED, EXIT_PLUGIN, EXIT_USAGE, TracerError
from tracer.sanitize import message


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (not the usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# One module per sub-command, each with ``add_parser(commands)``; listed in help order.
COMMAND_MODULES = [
    "trace_cmd",
    "plugins_cmd",
    "lessons_cmd",
    "tui_cmd",
    "serve_cmd",
    "check_cmd",
    "exercises_cmd",
    "new_plugin_cmd",
    "completion_cmd",
]


def build_parser() -> Parser:
    parser = Parser(
        prog="attn",
        description="Step through self-attention, stage by stage.",
        epilog="Exit status: 0 ok, 1 problems found, 2 usage or input error, 3 plugin failure, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"attention-tracer {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"tracer.cli.{name}").add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    use_ascii_fallback()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            # ``attn`` alone opens the lesson picker, which offers to resume. Its module
            # loads only here: every other command (and `attn --help`) goes without it.
            from tracer.cli.app_cmd import open_picker

            return open_picker(args)
        status: int = args.handler(args)
    except TracerError as error:
        prefix = "" if error.location is not None else "attn: "
        print(message(f"{prefix}{error}"), file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:  # Ctrl+C, or plugin code raising KeyboardInterrupt
        print("attn: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError:
        print(
            "attn: out of memory: try fewer tokens, a smaller --d-out or fewer heads",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``attn trace ... | head``); that is not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return status


def run() -> NoReturn:
    sys.exit(main())


__all__ = ["EXIT_PLUGIN", "build_parser", "main"]
