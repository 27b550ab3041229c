"""``attn``: the command-line entry point.

Each sub-command lives in its own module and registers itself with
``add_parser(subparsers)``; this module only parses, dispatches, and turns
every error a user can cause into one line on stderr and an exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from tracer import __version__
from tracer.cli.channels import discard_stdout, standard_streams
from tracer.cli.encoding import use_ascii_fallback
from tracer.errors import EXIT_INTERRUPTED, EXIT_PLUGIN, EXIT_USAGE, TracerError
from tracer.sanitize import drop_warnings, keep_warnings, message, take_warnings


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


WRITE_FAILURES = frozenset(
    {errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EPIPE}
)
"""Errors of a write that a full disk, a closed stream or a failing device give."""
GONE = "attn: the working folder no longer exists; cd to one that does and try again"


def main(argv: Sequence[str] | None = None) -> int:
    standard_streams()
    use_ascii_fallback()
    keep_warnings()
    drop_warnings()  # kept by an earlier main() in this process (a notebook's, a test's)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse fills ``targets`` (nargs="*") with the paths before the first option only:
        # ``attn lesson check --claims PATH`` leaves PATH over. Paths after an option are
        # still paths; anything else left over is the usual error.
        targets = getattr(args, "targets", None)
        if isinstance(targets, list) and not any(item.startswith("-") for item in extra):
            targets.extend(extra)
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if _working_folder_gone():  # relative paths mean nothing, and torch's libraries fail to load
        _say(GONE)
        return EXIT_USAGE
    try:
        if args.command is None:
            # ``attn`` alone opens the lesson picker, which offers to resume. Its module
            # loads only here: every other command (and `attn --help`) goes without it.
            from tracer.cli.app_cmd import open_picker

            status: int = open_picker(args)
        else:
            status = args.handler(args)
        sys.stdout.flush()  # here, not at exit: a full device is reported like any fault
        for line in take_warnings():
            _say(line)
    except TracerError as error:
        drop_warnings()  # the error is the one line: a failing step's warnings are noise
        prefix = "" if error.location is not None else "attn: "
        _say(f"{prefix}{error}")
        return error.exit_status
    except KeyboardInterrupt:  # Ctrl+C, or plugin code raising KeyboardInterrupt
        _say("attn: interrupted")
        return EXIT_INTERRUPTED
    except MemoryError:
        _say("attn: out of memory: try fewer tokens, a smaller --d-out or fewer heads")
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``attn trace ... | head``); that is not an error.
        discard_stdout()
        return 0
    except OSError as error:
        if _working_folder_gone():
            _say(GONE)
            return EXIT_USAGE
        if error.errno not in WRITE_FAILURES or error.filename is not None:
            raise
        # Standard output closed (``>&-``) or on a full device: its output is lost.
        discard_stdout()
        _say(f"attn: cannot write the output: {error.strerror or error}")
        return EXIT_USAGE
    return status


def _working_folder_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _say(text: str) -> None:
    """One line on stderr, if stderr can still take one."""
    with contextlib.suppress(OSError, ValueError):
        print(message(text), file=sys.stderr, flush=True)


def run() -> NoReturn:
    sys.exit(main())


__all__ = ["EXIT_PLUGIN", "build_parser", "main"]
