"""A lesson as plain text, for ``attn lesson run NAME --plain`` (all at once) and with
``-i`` (step by step, answered from stdin); also what ``attn lesson NAME`` falls back
to where the terminal cannot draw the app (``TERM=dumb``).

Both open the lesson through the one gate (:func:`tracer.session.lesson.open_lesson`),
so a lesson ``attn lesson check`` refuses stops with its problems (exit status 1)
rather than printing. Neither
imports Textual.
"""

from __future__ import annotations

import argparse
import sys

from tracer.errors import EXIT_OK
from tracer.sanitize import visible


def run_plain(target: str, args: argparse.Namespace) -> int:
    # Here, not at the top: the lesson modules load only for this command.
    from tracer.cli.trace_arguments import load_host
    from tracer.lessons.loader import preflight
    from tracer.session.lesson import open_lesson
    from tracer.text.plain_lesson import plain_lines

    path = preflight(target, args.lessons_dir)
    # The one gate: a lesson 'attn lesson check' refuses is refused here, with its problems.
    session = open_lesson(path, lesson_dirs=args.lessons_dir, host=load_host(args), warm=False)
    try:
        for text in plain_lines(session.lesson, session.host, runner=session.runner):
            print(visible(text), flush=True)  # a lesson's escape sequences are shown, not run
    finally:
        session.close()
    return EXIT_OK


def run_interactive(target: str, args: argparse.Namespace) -> int:
    """``attn lesson run NAME --plain -i``: the lesson step by step, answered from stdin."""
    # Here, not at the top: the lesson modules load only for this command.
    from tracer.cli.trace_arguments import load_host
    from tracer.errors import UsageError
    from tracer.lessons.loader import preflight
    from tracer.session.lesson import open_lesson
    from tracer.session.progress import ProgressStore
    from tracer.text.interactive import run_interactive as take
    from tracer.text.interactive import stdin_problem

    refused = stdin_problem(sys.stdin)  # before the lesson opens: nothing read, nothing run
    if refused is not None:
        raise UsageError(refused)
    path = preflight(target, args.lessons_dir)
    # The one gate: a lesson 'attn lesson check' refuses is refused here, with its problems.
    session = open_lesson(path, lesson_dirs=args.lessons_dir, host=load_host(args), warm=False)
    store = ProgressStore()
    warning = session.attach(store)
    try:
        return take(session, sys.stdin, sys.stdout, warning)
    finally:
        session.close()
