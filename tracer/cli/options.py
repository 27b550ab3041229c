"""Options shared by the commands that run a variant (trace, explore, check)."""

from __future__ import annotations

import argparse
import sys

from tracer.options import parse_assignments
from tracer.plugin_host import PluginHost
from tracer.runner import DEFAULT_INIT, DEFAULT_INPUTS, DEFAULT_SEED, TraceOptions


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("trace options")
    group.add_argument(
        "--inputs",
        default=DEFAULT_INPUTS,
        metavar="NAME|FILE",
        help=f"a built-in input set or a YAML/JSON file (default: {DEFAULT_INPUTS})",
    )
    group.add_argument(
        "--source",
        default=None,
        metavar="NAME|FILE",
        help="a second sequence for cross-attention: an input set whose tokens and embeddings "
        "give the keys and values (default: the inputs' own 'source:' section, if any)",
    )
    group.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default: 123)")
    group.add_argument(
        "--init",
        default=DEFAULT_INIT,
        metavar="rand|randn|linear",
        help="how to create the query/key/value weights (default: rand)",
    )
    group.add_argument(
        "--d-out",
        type=int,
        default=None,
        metavar="N",
        help="width of queries, keys and values (default: 2, or the file's weights)",
    )
    group.add_argument(
        "--dropout", type=float, default=0.0, metavar="P", help="dropout rate (default: 0)"
    )
    group.add_argument(
        "--query",
        default=None,
        metavar="I|TOKEN",
        help="focus one query token, by 0-based index or by token (e.g. 1 or journey)",
    )
    group.add_argument(
        "--heads",
        type=int,
        default=None,
        metavar="N",
        help="number of attention heads, for the multi-head variants; short for -o heads=N",
    )
    group.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set one of the variant's own options (repeatable; 'attn plugins' lists them)",
    )
    add_plugin_options(parser)


def add_plugin_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugins-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="load every .py file in DIR as a plugin (repeatable; also ATTN_PLUGINS_DIR)",
    )


def trace_options(args: argparse.Namespace) -> TraceOptions:
    """The trace options of a command line; ``-o`` values stay text until the variant is known."""
    options: dict[str, object] = dict(parse_assignments(getattr(args, "option", None) or []))
    if args.heads is not None:
        options["heads"] = args.heads
    return TraceOptions(
        inputs=args.inputs,
        seed=args.seed,
        init=args.init,
        d_out=args.d_out,
        dropout=args.dropout,
        query=args.query,
        options=options,
        option_flags=("--heads",) if args.heads is not None else (),
        source=getattr(args, "source", None),
    )


def load_host(args: argparse.Namespace, *, warn: bool = True) -> PluginHost:
    """Plugins from entry points and folders; other plugins' failures become warnings."""
    host = PluginHost(args.plugins_dir)
    if warn:
        for record in host.failures:
            print(
                f"attn: warning: plugin '{record.name}' failed: {record.error} (see 'attn plugins')",
                file=sys.stderr,
            )
        for record in host.plugins:
            for warning in record.warnings:
                print(f"attn: warning: plugin '{record.name}': {warning}", file=sys.stderr)
    return host
