"""Options shared by the commands that run a variant (trace, explore, check)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tracer.errors import UsageError
from tracer.inputs import InputSet
from tracer.inputs.builtin import BUILTIN_INPUTS
from tracer.options import parse_assignments
from tracer.plugin_host import PluginHost
from tracer.sanitize import message
from tracer.suggest import did_you_mean
from tracer.tracing.runner import DEFAULT_INIT, DEFAULT_INPUTS, DEFAULT_SEED, TraceOptions


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("trace options")
    group.add_argument(
        "--inputs",
        default=None,
        metavar="NAME|FILE",
        help="a built-in input set or a YAML/JSON file "
        f"(default: the variant's own inputs, else {DEFAULT_INPUTS})",
    )
    group.add_argument(
        "--source",
        default=None,
        metavar="NAME|FILE",
        help="a second sequence for cross-attention: an input set whose tokens and embeddings "
        "give the keys and values (default: the inputs' own 'source:' section, if any)",
    )
    group.add_argument(
        "--text",
        default=None,
        metavar="TEXT",
        help="text for a variant with its own tokenizer (model): its tokens become the inputs",
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


def trace_options(args: argparse.Namespace, host: PluginHost | None = None) -> TraceOptions:
    """The trace options of a command line; ``-o`` values stay text until the variant is known.

    With ``host``, ``--inputs`` and ``--source`` may also name an input set a variant brings
    (``Variant(inputs=...)``, its default source), as a lesson's ``inputs:`` may."""
    options: dict[str, object] = dict(parse_assignments(getattr(args, "option", None) or []))
    if args.heads is not None:
        options["heads"] = args.heads
    inputs, source = args.inputs, getattr(args, "source", None)
    if host is not None:
        inputs = named_inputs(inputs, host)
        source = named_inputs(source, host)
    return TraceOptions(
        inputs=inputs,
        seed=args.seed,
        init=args.init,
        d_out=args.d_out,
        dropout=args.dropout,
        query=args.query,
        options=options,
        option_flags=("--heads",) if args.heads is not None else (),
        source=source,
        text=getattr(args, "text", None),
    )


def brought_inputs(host: PluginHost) -> dict[str, InputSet]:
    """Input sets the installed variants bring (their own inputs, their default sources),
    by name."""
    found: dict[str, InputSet] = {}
    for variant in host.variants.values():
        for given in (variant.inputs, variant.default_source):
            if isinstance(given, InputSet):
                found.setdefault(given.name, given)
    return found


def plain_spec(spec: str) -> bool:
    """Whether ``spec`` names a built-in input set or a file (no plugin needed to read it)."""
    path = Path(spec)
    return (
        spec in BUILTIN_INPUTS
        or path.suffix.lower() in (".yaml", ".yml", ".json")
        or "/" in spec
        or path.exists()
    )


def named_inputs(spec: str | None, host: PluginHost) -> str | InputSet | None:
    """``spec`` as ``--inputs`` or ``--source`` gave it: a built-in set's name or a file stays text (loaded as
    before); a name a variant brings is that set; any other name is a UsageError that lists
    the names there are (did you mean...)."""
    if spec is None or plain_spec(spec):
        return spec
    brought = brought_inputs(host)
    if spec in brought:
        return brought[spec]
    named = sorted({*BUILTIN_INPUTS, *brought})
    own = f"; the variants' own: {', '.join(sorted(brought))}" if brought else ""
    raise UsageError(
        f"unknown input set '{spec}'{did_you_mean(spec, named)}; built-in sets: "
        f"{', '.join(sorted(BUILTIN_INPUTS))}{own}, or give a .yaml/.json file"
    )


def load_host(args: argparse.Namespace, *, warn: bool = True) -> PluginHost:
    """Plugins from entry points and folders; other plugins' failures become warnings."""
    host = PluginHost(args.plugins_dir)
    if warn:
        for warning in host.warnings:
            print(message(f"attn: warning: {warning}"), file=sys.stderr)
        for record in host.failures:
            text = (
                f"attn: warning: plugin '{record.name}' failed: {record.error} (see 'attn plugins')"
            )
            print(message(text), file=sys.stderr)
        for record in host.plugins:
            for warning in record.warnings:
                print(message(f"attn: warning: plugin '{record.name}': {warning}"), file=sys.stderr)
    return host
