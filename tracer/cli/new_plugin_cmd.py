"""``attn new-plugin NAME [DIR]``: scaffold a pip-installable plugin package."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tracer.errors import EXIT_OK
from tracer.plugin_host import PluginHost


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "new-plugin",
        help="scaffold a pip-installable plugin package with one variant",
        description=(
            "Write a plugin package: a module with one variant (scaled dot-product attention to "
            "start from), a pyproject.toml with the attention_tracer entry point, a test and a "
            "README. Existing files are never overwritten."
        ),
    )
    parser.add_argument(
        "name", metavar="NAME", help="variant name: lower-case letters, digits, hyphens"
    )
    parser.add_argument(
        "dir", metavar="DIR", nargs="?", type=Path, help="where to write it (default: attn-NAME)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The templates' code loads when a plugin is written, not for every `attn --help`.
    from tracer.learner.exercises.scaffold import check_name, next_steps, scaffold

    names = check_name(args.name, set(PluginHost().variants))
    folder = args.dir if args.dir is not None else Path(names.distribution)
    for path in scaffold(names, folder):
        print(f"  wrote  {path}")
    print("\nNext:")
    for command in next_steps(names, folder):
        print(f"  {command}")
    return EXIT_OK
