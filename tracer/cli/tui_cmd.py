"""``attn explore VARIANT``: step through a variant's stages in the terminal app."""

from __future__ import annotations

import argparse
from typing import Any

from tracer.cli.trace_arguments import add_trace_options


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "explore",
        help="step through a variant's stages and loops in the terminal app",
        description=(
            "Open the step-through app on one variant, without a lesson: every stage, "
            "every loop sub-step, the code that ran and the tensors it produced. "
            "Keys: →/← step, e end of loop, a auto-play, z overview/numbers, "
            "w token view, ? help, q quit. Without a terminal, use --plain."
        ),
    )
    parser.add_argument(
        "variant", help="variant name, e.g. naive-loop, vectorized, trainable, masked"
    )
    add_trace_options(parser)
    parser.add_argument(
        "--plain",
        action="store_true",
        help="print the steps as text (stages, and each loop's first sub-steps) instead",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: Textual loads only for this command.
    from tracer.cli.app_cmd import open_explore

    return open_explore(args)
