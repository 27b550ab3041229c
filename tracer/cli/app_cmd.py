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
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tracer.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from tracer.tracing.stepper import Stepper

PLAIN_SUBSTEPS = 12
"""Sub-steps of each loop that ``explore --plain`` prints before summing up the rest."""


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
    from tracer.cli.options import plain_spec, trace_options
    from tracer.inputs import InputSet, load_inputs
    from tracer.runner import resolve_query

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
        from tracer.runner import text_inputs, tokenized

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
        from tracer.runner import resolve_inputs

        inputs = resolve_inputs(None, PluginHost(plugin_dirs).variant(args.variant))
        resolve_query(options.query, inputs.tokens)
        options = replace(options, inputs=inputs)
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


def plain_picker(lesson_dirs: list[str]) -> int:
    """The picker as text: each lesson with its progress, and how to open one."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.lessons.loader import find_lessons, shipped_dir
    from tracer.session.progress import ProgressStore, lesson_key, progress_text

    refs = find_lessons(lesson_dirs)
    store = ProgressStore()
    if store.warning:
        print(f"attn: warning: {store.warning}", file=sys.stderr)
    shipped = shipped_dir()
    width = max((len(ref.title or ref.name) for ref in refs), default=0)
    print("Lessons:")
    for ref in refs:
        if ref.problem:
            status = f"cannot be opened: {ref.problem}"
        else:
            status = progress_text(store.get(lesson_key(ref.path, shipped)))
        origin = "" if ref.origin == "built-in" else f"  ({ref.origin})"
        print(f"{ref.number:>3}. {(ref.title or ref.name).ljust(width)}  {status}{origin}")
    if not refs:
        print("  No lessons found.")
        return EXIT_OK
    last = store.last()
    resume = next(
        (r for r in refs if last is not None and lesson_key(r.path, shipped) == last[0]), None
    )
    print()
    if resume is not None and last is not None:
        print(f"You stopped in lesson {resume.number} at {progress_text(last[1])}.")
    print("Open a lesson as text: attn lesson NUMBER (or attn lesson run NUMBER --plain)")
    return EXIT_OK


def explore_plain(variant: str, options: object, plugin_dirs: list[str]) -> int:
    """Every step of the variant as text: stages in full, loops' first sub-steps and a count."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.session.explore import explore_loader

    session = explore_loader(variant, options, plugin_dirs)  # type: ignore[arg-type]
    for warning in session.warnings:
        print(f"attn: warning: {warning}", file=sys.stderr)
    for chunk in plain_steps(session.stepper):
        print(chunk)
    error = session.stepper.error
    if error is not None:
        print(f"attn: {error}", file=sys.stderr)
        return error.exit_status
    return EXIT_OK


def plain_steps(stepper: Stepper) -> Iterator[str]:
    """The text of each stage, and of a loop's first sub-steps, in the order they ran."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.render.text import format_number, format_stage, shape_text, source_line
    from tracer.tui.equations import equation_text
    from tracer.variant import Stage

    trace = stepper.trace
    variant = trace.variant
    yield f"{variant.name}: {variant.title}\ntokens: {' '.join(trace.tokens)}{source_line(trace)}\n"
    shown_in_loop = 0
    skipped = 0
    index = 0
    while True:
        try:
            step = stepper.get(index)
        except IndexError:
            break
        index += 1
        if isinstance(step, Stage):
            if skipped:
                yield f"   … and {skipped:,} more sub-steps of this loop\n"
            shown_in_loop = skipped = 0
            yield format_stage(step, stepper.trace, len(variant.stages)) + "\n"
            continue
        if shown_in_loop >= PLAIN_SUBSTEPS:
            skipped += 1
            continue
        shown_in_loop += 1
        where = ", ".join(str(p) for p in step.position)
        lines = [f"-- {step.stage} loop, sub-step {step.index + 1} at ({where})"]
        if step.formula:
            lines.append(f"   {step.formula}")
        equation = equation_text(step)
        if equation is not None:
            lines.extend(f"   {line}" for line in equation.plain.splitlines())
        else:
            for name, tensor in step.tensors.items():
                values = tensor.detach().flatten().tolist()[:8]
                shown = ", ".join(format_number(v) for v in values)
                lines.append(f"   {name} ({shape_text(tensor)}): {shown}")
        yield "\n".join(lines)
    if skipped:
        yield f"   … and {skipped:,} more sub-steps of this loop\n"
