"""``attn trace VARIANT``: run a variant and print every stage."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from tracer.cli.channels import private_stdout, write_document
from tracer.cli.trace_arguments import add_trace_options, load_host, trace_options
from tracer.errors import EXIT_OK, UsageError
from tracer.sanitize import visible
from tracer.suggest import did_you_mean
from tracer.tracing.runner import start_trace
from tracer.variant import Variant


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
    parser.add_argument(
        "--stages",
        default=None,
        metavar="NAME,...",
        help="print only these stages (and, with --substeps, their loops), e.g. --stages context",
    )
    parser.add_argument(
        "--substeps",
        action="store_true",
        help="also print every loop iteration (sub-step); with --json, include them",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The table formatting code (tens of ms to import) stays off `attn --help`.
    from tracer.render.text import LazyTensor, format_trace, trace_json, write_json

    # Before any plugin loads: a thread it starts at import can print, but not into the JSON.
    out = private_stdout() if args.json else sys.stdout
    host = load_host(args)
    stages = stage_filter(args.stages, host.variant(args.variant))
    trace = start_trace(args.variant, trace_options(args, host), host)
    if args.json:
        # Whatever the variant prints while it runs goes to stderr: stdout is one JSON document.
        with contextlib.redirect_stdout(sys.stderr):
            document = trace_json(trace, stages, args.substeps, tensor=LazyTensor)
        pieces: list[str] = []

        def write(text: str) -> None:  # in blocks: one write per number would be slow
            pieces.append(text)
            if len(pieces) >= 4096:
                write_document(out, "".join(pieces))
                pieces.clear()

        write_json(document, write)
        write_document(out, "".join(pieces) + "\n")
        return EXIT_OK
    for chunk in format_trace(trace, stages, args.substeps):
        print(visible(chunk))  # tokens and plugin lines are the user's text
    return EXIT_OK


def stage_filter(text: str | None, variant: Variant) -> frozenset[str] | None:
    """The stages named in ``--stages a,b``, each checked against the variant's."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError("--stages needs at least one stage name")
    for name in names:
        if name not in variant.stages:
            raise UsageError(
                f"--stages: variant '{variant.name}' has no stage '{name}'"
                f"{did_you_mean(name, variant.stages)}; its stages are {', '.join(variant.stages)}"
            )
    return frozenset(names)
