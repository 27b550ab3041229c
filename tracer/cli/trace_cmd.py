"""``attn trace VARIANT``: run a variant and print every stage."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tracer.cli.options import add_trace_options, load_host, trace_options
from tracer.errors import EXIT_OK


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "trace",
        help="run a variant and print every stage",
        description="Run an attention variant and print each stage's tensors, with token labels.",
    )
    parser.add_argument(
        "variant", help="variant name, e.g. naive-loop, vectorized, trainable, masked"
    )
    add_trace_options(parser)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document instead of text"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tracer.render.text import format_trace, trace_json
    from tracer.runner import start_trace

    host = load_host(args)
    trace = start_trace(args.variant, trace_options(args), host)
    if args.json:
        json.dump(trace_json(trace), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return EXIT_OK
    for chunk in format_trace(trace):
        print(chunk)
    return EXIT_OK
