"""Opening the app from the command line: ``attn``, ``attn lesson NAME``, ``attn explore VARIANT``.

Each checks what it can without torch (inputs files, option values), so a
typo gets the CLI's one-line error and exit status. Then it makes sure there
is a terminal to draw on: without one (a pipe, a cron job, ``TERM=dumb``) it
says what to use instead and exits 2, rather than hanging or painting escape
codes into a file. ``attn explore --plain`` prints the steps as text.
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


def need_terminal(what: str, instead: str) -> None:
    """UsageError (exit 2) unless stdin and stdout are a terminal that can draw the app.

    A driver named in ``TEXTUAL_DRIVER`` draws elsewhere (``attn serve`` runs the app
    with textual-serve's web driver, on pipes), so it needs no terminal.
    """
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(f"{what} needs an interactive terminal; without one, use {instead}")
    if os.environ.get("TERM") == "dumb":
        raise UsageError(f"{what} cannot draw on TERM=dumb; use {instead}")


def open_picker(args: argparse.Namespace) -> int:
    """``attn`` with no command: choose a lesson (or resume the last one)."""
    from tracer.tui.launch import make_picker_app, run_app

    need_terminal(
        "the lesson picker",
        "'attn lessons', 'attn lesson run NAME --plain' or 'attn trace VARIANT'",
    )
    app = make_picker_app(
        plugin_dirs=list(getattr(args, "plugins_dir", None) or ()),
        lesson_dirs=list(getattr(args, "lessons_dir", None) or ()),
    )
    return run_app(app)


def open_lesson(args: argparse.Namespace) -> int:
    """``attn lesson NAME|PATH``: the lesson must exist; its problems show inside the app."""
    from tracer.lessons.loader import resolve_lesson
    from tracer.tui.launch import make_lesson_app, run_app

    spec = getattr(args, "lesson", None) or getattr(args, "name", None)
    lesson_dirs = list(getattr(args, "lessons_dir", None) or ())
    path = resolve_lesson(str(spec), lesson_dirs)
    need_terminal("the lesson viewer", f"'attn lesson run {spec} --plain'")
    app = make_lesson_app(
        path,
        plugin_dirs=list(getattr(args, "plugins_dir", None) or ()),
        lesson_dirs=lesson_dirs,
    )
    return run_app(app)


def open_explore(args: argparse.Namespace) -> int:
    """``attn explore VARIANT [trace options] [--plain]``."""
    from dataclasses import replace

    from tracer.cli.options import trace_options
    from tracer.inputs import load_inputs
    from tracer.runner import resolve_query

    options = trace_options(args)
    assert isinstance(options.inputs, str)
    inputs = load_inputs(options.inputs)
    resolve_query(options.query, inputs.tokens)
    options = replace(options, inputs=inputs)
    plugin_dirs = list(args.plugins_dir or ())
    if getattr(args, "plain", False):
        return explore_plain(args.variant, options, plugin_dirs)
    need_terminal(
        "the explorer", f"'attn explore {args.variant} --plain' or 'attn trace {args.variant}'"
    )
    from tracer.tui.launch import make_explore_app, run_app

    return run_app(make_explore_app(args.variant, options, plugin_dirs))


def explore_plain(variant: str, options: object, plugin_dirs: list[str]) -> int:
    """Every step of the variant as text: stages in full, loops' first sub-steps and a count."""
    from tracer.tui.launch import explore_loader

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
    from tracer.render.text import format_number, format_stage, shape_text
    from tracer.tui.equations import equation_text
    from tracer.variant import Stage

    trace = stepper.trace
    variant = trace.variant
    yield f"{variant.name}: {variant.title}\ntokens: {' '.join(trace.tokens)}\n"
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
