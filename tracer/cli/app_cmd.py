"""Opening the app from the command line: ``attn``, ``attn lesson NAME``, ``attn explore VARIANT``.

Each checks what it can without torch (inputs files, option values), so a
typo gets the CLI's one-line error and exit status. Then it makes sure there
is a terminal to draw on: without one (a pipe, a cron job) it says what to use
instead and exits 2, rather than hanging or painting escape codes into a file.
A terminal that cannot draw (``TERM=dumb``: Emacs' shell, some IDE consoles)
gets the plain form instead, with one line on stderr saying so: the lesson as
text, the explorer's steps as text, and for ``attn`` alone the list of lessons
with their progress. ``attn explore --plain`` prints the steps as text anywhere.
"""

from __future__ import annotations

import argparse
import os
import sys

from tracer.errors import UsageError


def need_terminal(what: str, instead: str) -> bool:
    """Whether the app can be drawn (True) or the terminal wants plain text (False, TERM=dumb).

    UsageError (exit 2) when stdin or stdout is not a terminal at all. A driver named
    in ``TEXTUAL_DRIVER`` draws elsewhere (``attn serve`` runs the app with
    textual-serve's web driver, on pipes), so it needs no terminal.
    """
    if os.environ.get("TEXTUAL_DRIVER"):
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(f"{what} needs an interactive terminal; without one, use {instead}")
    return os.environ.get("TERM") != "dumb"


def say_plain(what: str) -> None:
    """One line on stderr: the plain form was chosen because of TERM=dumb, not by mistake."""
    print(
        f"attn: TERM=dumb cannot draw the app, so {what} is shown as plain text "
        "(set TERM, e.g. TERM=xterm-256color, for the app)",
        file=sys.stderr,
        flush=True,
    )


def open_picker(args: argparse.Namespace) -> int:
    """``attn`` with no command: choose a lesson (or resume the last one)."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.tui.launch import make_picker_app, run_app

    if not need_terminal(
        "the lesson picker",
        "'attn lessons', 'attn lesson run NAME --plain' or 'attn trace VARIANT'",
    ):
        say_plain("the list of lessons")
        from tracer.text.plain_picker import plain_picker

        return plain_picker(list(getattr(args, "lessons_dir", None) or ()))
    app = make_picker_app(
        plugin_dirs=list(getattr(args, "plugins_dir", None) or ()),
        lesson_dirs=list(getattr(args, "lessons_dir", None) or ()),
    )
    return run_app(app)


def open_lesson(args: argparse.Namespace) -> int:
    """``attn lesson NAME|PATH``: the lesson must exist; its problems show inside the app."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.lessons.loader import resolve_lesson
    from tracer.tui.launch import make_lesson_app, run_app

    spec = getattr(args, "lesson", None) or getattr(args, "name", None)
    lesson_dirs = list(getattr(args, "lessons_dir", None) or ())
    path = resolve_lesson(str(spec), lesson_dirs)
    if not need_terminal("the lesson viewer", f"'attn lesson run {spec} --plain'"):
        # Here, not at the top: Textual and the lesson modules load only for this command.
        from tracer.cli.plain_cmd import run_plain

        say_plain("the lesson")
        return run_plain(str(spec), args)
    app = make_lesson_app(
        path,
        plugin_dirs=list(getattr(args, "plugins_dir", None) or ()),
        lesson_dirs=lesson_dirs,
    )
    return run_app(app)


def open_explore(args: argparse.Namespace) -> int:
    """``attn explore VARIANT [trace options] [--plain]``."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from dataclasses import replace

    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.cli.trace_arguments import plain_spec, trace_options
    from tracer.inputs import InputSet, load_inputs
    from tracer.tracing.runner import resolve_query

    options = trace_options(args)
    plugin_dirs = list(args.plugins_dir or ())
    if isinstance(options.inputs, str) and not plain_spec(options.inputs):
        # Not a built-in set nor a file: a set a variant brings (the plugins load for it).
        from tracer.plugin_host import PluginHost

        options = trace_options(args, PluginHost(plugin_dirs))
    if options.text is not None:
        # Text: the variant's own tokenizer splits it here, so --query can name its tokens.
        from tracer.options import check_options, flag_where
        from tracer.plugin_host import PluginHost
        from tracer.tracing.runner import text_inputs, tokenized

        variant = PluginHost(plugin_dirs).variant(args.variant)
        checked = check_options(
            variant, options.variant_options(), flag_where(options.option_flags)
        )
        inputs = tokenized(text_inputs(options.text, variant), variant, checked)
        resolve_query(options.query, inputs.tokens)
        options = replace(options, inputs=inputs, text=None)
    elif options.inputs is not None:
        inputs = (
            options.inputs if isinstance(options.inputs, InputSet) else load_inputs(options.inputs)
        )
        resolve_query(options.query, inputs.tokens)
        options = replace(options, inputs=inputs)
    elif options.query is not None:
        # The variant's own inputs (else your-journey) hold the tokens --query names.
        from tracer.plugin_host import PluginHost
        from tracer.tracing.runner import resolve_inputs

        inputs = resolve_inputs(None, PluginHost(plugin_dirs).variant(args.variant))
        resolve_query(options.query, inputs.tokens)
        options = replace(options, inputs=inputs)
    from tracer.text.plain_explore import explore_plain

    if getattr(args, "plain", False):
        return explore_plain(args.variant, options, plugin_dirs)
    if not need_terminal(
        "the explorer", f"'attn explore {args.variant} --plain' or 'attn trace {args.variant}'"
    ):
        say_plain("every step of the variant")
        return explore_plain(args.variant, options, plugin_dirs)
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.tui.launch import make_explore_app, run_app

    return run_app(make_explore_app(args.variant, options, plugin_dirs))
