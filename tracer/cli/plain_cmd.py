"""A lesson as plain text, for ``attn lesson run NAME --plain`` (all at once) and with
``-i`` (step by step, answered from stdin); also what ``attn lesson NAME`` falls back
to where the terminal cannot draw the app (``TERM=dumb``).

Both check the lesson first, as ``attn lesson check`` would, and stop with its
problems (exit status 1) rather than print a lesson that cannot run. Neither
imports Textual.
"""

from __future__ import annotations

import argparse
import sys

from tracer.errors import EXIT_OK
from tracer.sanitize import message, visible


def run_plain(target: str, args: argparse.Namespace) -> int:
    # Here, not at the top: the lesson modules load only for this command.
    from tracer.cli.options import load_host
    from tracer.lessons.check import check_lesson
    from tracer.lessons.loader import LessonError, load_lesson, preflight
    from tracer.lessons.plain import plain_lines

    path = preflight(target, args.lessons_dir)
    host = load_host(args)
    lesson = load_lesson(path, host)
    problems = check_lesson(lesson, host, typed=False)  # a typed number does not stop it
    if problems:
        raise LessonError(problems)
    for text in plain_lines(lesson, host):
        print(visible(text), flush=True)  # a lesson's escape sequences are shown, not run
    return EXIT_OK


def run_interactive(target: str, args: argparse.Namespace) -> int:
    """``attn lesson run NAME --plain -i``: the lesson step by step, answered from stdin."""
    # Here, not at the top: the lesson modules load only for this command.
    from tracer.cli.interactive import run_interactive as take
    from tracer.cli.options import load_host
    from tracer.lessons.check import check_lesson
    from tracer.lessons.loader import LessonError, load_lesson, preflight
    from tracer.session.lesson import start_session
    from tracer.session.progress import ProgressStore

    path = preflight(target, args.lessons_dir)
    host = load_host(args)
    lesson = load_lesson(path, host, extra_dirs=args.lessons_dir)
    problems = check_lesson(lesson, host, typed=False)  # a typed number does not stop it
    if problems:
        raise LessonError(problems)
    session = start_session(lesson, host, path, lesson_dirs=args.lessons_dir)
    store = ProgressStore()
    warning = session.attach(store)
    if warning:
        print(message(f"attn: warning: {warning}"), file=sys.stderr)
    try:
        return take(session, sys.stdin, sys.stdout)
    finally:
        session.close()
