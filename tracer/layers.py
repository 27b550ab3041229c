"""The package's layers, top to bottom: the one table the import test and the architecture page read.

A module may import from its own layer or any layer below it, never from one above, and there
is no import cycle (function-local imports count). ``tests/core/test_import_graph.py`` checks
every module of ``tracer/`` and ``plugins/`` against this table, and
``scripts/architecture_doc.py`` writes the table into ``docs/architecture.md`` (a test checks
that the page is up to date). Nothing in the app imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    name: str
    members: tuple[str, ...]
    """Dotted module or package names; a package covers everything under it."""
    job: str


LAYERS: tuple[Layer, ...] = (
    Layer(
        "cli",
        ("tracer.cli", "tracer.__main__"),
        "parses arguments, dispatches, turns a `TracerError` into one line and its exit status",
    ),
    Layer(
        "front ends",
        ("tracer.tui", "tracer.text", "tracer.notebook", "tracer.serve"),
        "draw what the session decides: the Textual app, plain text (`--plain`, `--plain -i`, "
        "the plain explorer, Markdown and notebook export), HTML in Jupyter, the app in a browser",
    ),
    Layer(
        "session",
        ("tracer.session",),
        "a learner's way through a lesson or the explorer, step by step, with no Textual in it: "
        "the position, the moves, the loops it walks, progress",
    ),
    Layer(
        "lessons and learner",
        ("tracer.lessons", "tracer.learner"),
        "the lesson format (reading, checking, grading, hiding answers) and learners' own code "
        "(`attn check`, its sandbox and judging, exercises)",
    ),
    Layer(
        "tracing, plugin host, render",
        ("tracer.tracing", "tracer.plugin_host", "tracer.render", "tracer.testing"),
        "run a variant's generator step by step (names and options to a ready trace, lines, "
        "checks, workers); load plugins one at a time; turn tensors into labelled text. "
        "`tracer.testing`, the plugin author's test kit, runs traces and so sits here",
    ),
    Layer(
        "plugin API",
        (
            "tracer",
            "tracer.variant",
            "tracer.declared",
            "tracer.equations",
            "tracer.hookspecs",
            "tracer.options",
            "tracer.inputs",
            "tracer.mistakes",
            "tracer.dropout",
        ),
        "everything a plugin may import, all of it in the API reference",
    ),
    Layer(
        "base",
        (
            "tracer.errors",
            "tracer.files",
            "tracer.processes",
            "tracer.sanitize",
            "tracer.parsing",
            "tracer.suggest",
            "tracer.environment",
            "tracer.yamldoc",
            "tracer.layers",
        ),
        "errors with their exit statuses, atomic writes, process isolation (children that die with "
        "their parent, memory caps, typed messages), the one terminal sanitiser, number parsing, "
        "did-you-mean, `ATTN_*` settings, YAML with positions",
    ),
)

PLUGIN_API: tuple[str, ...] = (
    "tracer",
    "tracer.hookspecs",
    "tracer.inputs",
    "tracer.mistakes",
    "tracer.dropout",
    "tracer.errors",
    "tracer.testing",
)
"""What a plugin (built-in or not) may import from ``tracer``, besides its own package, all of
it in docs/api.md: ``Variant`` and the rest of :mod:`tracer.variant` come through ``tracer``;
:mod:`tracer.options` is the tool's own validator of what a plugin declares."""

SHIMS: dict[str, str] = {
    "tracer.runner": "tracer.tracing.runner",
    "tracer.tui.progress": "tracer.session.progress",
}
"""Old import paths kept working after a move, each pointing at where the code lives now.

A shim imports only its target; it belongs to no layer."""


UPWARD: dict[tuple[str, str], str] = {
    ("tracer", "tracer.notebook"): "`from tracer import trace` in a notebook: loaded only when "
    "asked for, by the package's module `__getattr__`",
}
"""The only imports that point up a layer, each inside a function and said why."""


def layer_of(module: str) -> int | None:
    """The index in ``LAYERS`` of the most specific member naming ``module``."""
    best: tuple[int, int] | None = None
    for number, layer in enumerate(LAYERS):
        for member in layer.members:
            # The root package is a member by itself, not everything under it.
            inside = "." in member and module.startswith(f"{member}.")
            if module == member or inside:
                depth = member.count(".") + 1
                if best is None or depth > best[0]:
                    best = (depth, number)
    return None if best is None else best[1]
