"""Entry points from the command line into the app: picker, lesson, explorer.

Each checks what it can without torch (inputs files, option values), so a
typo still gets the CLI's one-line error and exit status, then starts the
app, whose screens do the heavy loading in a worker after the first frame.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracer.runner import TraceOptions
    from tracer.tui.app import TracerApp
    from tracer.tui.explore_screen import ExploreSession


def explore_loader(
    variant: str,
    options: TraceOptions,
    plugin_dirs: list[str] | tuple[str, ...] = (),
) -> ExploreSession:
    """Load the plugins and start ``variant`` (runs in a worker: this imports torch)."""
    from tracer.inputs import InputSet, load_inputs
    from tracer.plugin_host import PluginHost
    from tracer.runner import build_context
    from tracer.tracing.stepper import Stepper
    from tracer.tui.explore_screen import ExploreSession

    host = PluginHost(plugin_dirs)
    found = host.variant(variant)
    inputs = options.inputs if isinstance(options.inputs, InputSet) else load_inputs(options.inputs)
    context = build_context(inputs, options, variant=found)
    stepper = Stepper(lambda: host.start(variant, context))
    warnings = tuple(
        f"plugin '{record.name}' failed: {record.error} (see 'attn plugins')"
        for record in host.failures
    )
    return ExploreSession(found, stepper, context.query, warnings, tuple(sorted(host.variants)))


def make_explore_app(
    variant: str, options: TraceOptions, plugin_dirs: list[str] | tuple[str, ...] = ()
) -> TracerApp:
    from tracer.tui.app import TracerApp
    from tracer.tui.explore_screen import ExploreScreen

    return TracerApp(
        lambda: ExploreScreen(
            lambda: explore_loader(variant, options, plugin_dirs), f"explore {variant}"
        ),
        plugin_dirs=plugin_dirs,
    )


def open_explore(args: argparse.Namespace) -> int:
    """``attn explore VARIANT [trace options]``."""
    from dataclasses import replace

    from tracer.cli.options import trace_options
    from tracer.inputs import load_inputs
    from tracer.runner import resolve_query

    options = trace_options(args)
    assert isinstance(options.inputs, str)
    inputs = load_inputs(options.inputs)
    resolve_query(options.query, inputs.tokens)
    options = replace(options, inputs=inputs)
    app = make_explore_app(args.variant, options, list(args.plugins_dir or ()))
    app.run()
    return app.exit_status


def make_lesson_app(
    spec: str | Path,
    *,
    plugin_dirs: list[str] | tuple[str, ...] = (),
    lesson_dirs: list[str] | tuple[str, ...] = (),
    resume: bool = True,
) -> TracerApp:
    from tracer.tui.app import TracerApp
    from tracer.tui.lesson_screen import LessonScreen

    return TracerApp(
        lambda: LessonScreen(spec, plugin_dirs=plugin_dirs, lesson_dirs=lesson_dirs, resume=resume),
        plugin_dirs=plugin_dirs,
        lesson_dirs=lesson_dirs,
    )


def open_lesson(args: argparse.Namespace) -> int:
    """``attn lesson NAME|PATH``: the lesson must exist; its problems show inside the app."""
    from tracer.lessons.loader import resolve_lesson

    spec = getattr(args, "lesson", None) or getattr(args, "name", None)
    lesson_dirs = list(getattr(args, "lessons_dir", None) or ())
    path = resolve_lesson(str(spec), lesson_dirs)
    app = make_lesson_app(
        path,
        plugin_dirs=list(getattr(args, "plugins_dir", None) or ()),
        lesson_dirs=lesson_dirs,
    )
    app.run()
    return app.exit_status


def make_picker_app(
    *,
    plugin_dirs: list[str] | tuple[str, ...] = (),
    lesson_dirs: list[str] | tuple[str, ...] = (),
) -> TracerApp:
    from tracer.tui.app import TracerApp
    from tracer.tui.picker_screen import PickerScreen

    return TracerApp(
        lambda: PickerScreen(plugin_dirs=plugin_dirs, lesson_dirs=lesson_dirs),
        plugin_dirs=plugin_dirs,
        lesson_dirs=lesson_dirs,
    )


def open_picker(args: argparse.Namespace) -> int:
    """``attn`` with no command: choose a lesson (or resume the last one)."""
    app = make_picker_app(
        plugin_dirs=list(getattr(args, "plugins_dir", None) or ()),
        lesson_dirs=list(getattr(args, "lessons_dir", None) or ()),
    )
    app.run()
    return app.exit_status
