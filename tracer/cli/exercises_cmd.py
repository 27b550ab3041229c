"""``attn exercises init|watch|hint|list DIR``: practise by writing attention yourself."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tracer.environment import Limit, parse_limit
from tracer.errors import EXIT_OK


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "exercises",
        help="numbered exercises with a watcher, progress and hints",
        description=(
            "Write attention yourself, one exercise at a time: 'init' writes the stubs, "
            "'watch' checks the current one each time you save it and moves on when it passes."
        ),
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    init = actions.add_parser("init", help="write the exercise stubs (never over your files)")
    init.add_argument("dir", metavar="DIR", type=Path)
    init.set_defaults(handler=run_init)

    watch = actions.add_parser(
        "watch",
        help="check the current exercise on every save",
        description=(
            "Check the current exercise now and each time you save it; move on when it passes. "
            "In a terminal, keys: h next hint, r reset the exercise to its stub (asks first; "
            "your version is kept as .bak), Enter check now, s skip, l list, q quit."
        ),
        epilog="Exit status with --once: 0 passed, 1 not yet, 2 the file fails.",
    )
    watch.add_argument("dir", metavar="DIR", type=Path)
    watch.add_argument("--once", action="store_true", help="check once and exit")
    watch.add_argument(
        "--interval", default="0.5", metavar="SECONDS", help="how often to look for saves"
    )
    watch.set_defaults(handler=run_watch)

    hint = actions.add_parser("hint", help="the next hint for the current exercise")
    hint.add_argument("dir", metavar="DIR", type=Path)
    hint.add_argument("exercise", nargs="?", help="another exercise, by number or name")
    hint.set_defaults(handler=run_hint)

    listing = actions.add_parser("list", help="every exercise and whether it is done")
    listing.add_argument("dir", metavar="DIR", type=Path)
    listing.set_defaults(handler=run_list)


def run_init(args: argparse.Namespace) -> int:
    # The exercises and their texts (several ms to import) load only when a command of
    # `attn exercises` runs: `attn --help` imports this module. The same in each handler.
    from tracer.learner.exercises.workbook import EXERCISES, init_exercises

    results = init_exercises(args.dir)
    for path, written in results:
        print(f"  {'wrote' if written else 'kept '}  {path}")
    kept = sum(1 for _, written in results if not written)
    note = f" ({kept} already there, left as they were)" if kept else ""
    print(
        f"{len(EXERCISES)} exercises in {args.dir}{note}. Start with: attn exercises watch {args.dir}"
    )
    return EXIT_OK


def run_watch(args: argparse.Namespace) -> int:
    from tracer.learner.exercises.workbook import watch  # off `attn --help` (see run_init)

    interval = parse_limit(
        "--interval", str(args.interval), Limit("seconds", 0, above=True, unlimited=False)
    )

    def emit(text: str) -> None:
        print(text + "\n", flush=True)

    if args.once or not sys.stdin.isatty():
        return watch(args.dir, emit, once=args.once, interval=interval)
    from tracer.learner.exercises.terminal_keys import (
        TerminalKeys,  # tty and termios: off `attn --help`
    )

    with TerminalKeys() as keys:  # restored however the watcher ends
        return watch(args.dir, emit, interval=interval, keys=keys, confirm=keys.confirm)


def run_hint(args: argparse.Namespace) -> int:
    from tracer.learner.exercises.workbook import hint  # off `attn --help` (see run_init)

    print(hint(args.dir, args.exercise))
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    from tracer.learner.exercises.workbook import status_lines  # off `attn --help` (see run_init)

    for line in status_lines(args.dir):
        print(line)
    return EXIT_OK
