"""``attn plugins``: every plugin, where it came from, its variants, and any failure."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tracer.cli.channels import private_stdout, write_document
from tracer.cli.trace_arguments import add_plugin_options
from tracer.errors import EXIT_OK
from tracer.options import describe
from tracer.plugin_host import PluginHost
from tracer.sanitize import message
from tracer.variant import Variant


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "plugins",
        help="list plugins, their variants and stages, and load errors",
        description="List every plugin: name, version, origin, variants with their stages, errors.",
    )
    add_plugin_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    out = private_stdout() if args.json else sys.stdout  # before plugins: see tracer.cli.channels
    host = PluginHost(args.plugins_dir)
    for warning in host.warnings:  # the environment's, not one plugin's: stderr, beside --json
        print(message(f"attn: warning: {warning}"), file=sys.stderr)
    if args.json:
        document = [record.as_json(host) for record in host.plugins]
        write_document(out, json.dumps(document, indent=2) + "\n")
        return EXIT_OK

    def say(text: str) -> None:  # names, titles and errors are the plugins' own text
        print(message(text))

    for record in host.plugins:
        version = f" {record.version}" if record.version else ""
        say(f"{record.name}{version}  [{record.origin}]  {record.source}")
        for name in record.variants:
            variant = host.variants[name]
            say(f"  {name}: {variant.title}")
            say(f"    stages: {', '.join(variant.stages)}")
            if variant.loops:
                say(f"    loops: {', '.join(variant.loops)}")
            for option in variant.options:
                say(f"    -o {describe(option)}")
            for line in variant_facts(variant):
                say(f"    {line}")
        for warning in record.warnings:
            say(f"  warning: {warning}")
        if record.error:
            say(f"  FAILED: {record.error}")
    return EXIT_OK


def variant_facts(variant: Variant) -> list[str]:
    """What a variant needs beyond its options: learnt parameters, a second sequence, its own
    input sets, stages whose weights need not sum to 1 (one line each, for ``attn plugins``)."""
    lines = []
    for param in variant.params:
        shape = " × ".join(str(dim) for dim in param.shape)
        init = param.init or "--init"
        lines.append(
            f"param {param.name} ({shape}, {init})" + (f": {param.help}" if param.help else "")
        )
    if variant.source is not None:
        default = variant.default_source
        named = (
            "ton-voyage"
            if default is None
            else default
            if isinstance(default, str)
            else getattr(default, "name", "its own")
        )
        lines.append(f"source: {variant.source} (second sequence; default: {named})")
    if variant.inputs is not None:
        tokens = " ".join(variant.inputs.tokens[:8]) + (
            " …" if len(variant.inputs.tokens) > 8 else ""
        )
        lines.append(f"inputs: {variant.inputs.name} ({tokens})")
    if not variant.uses_weights:
        lines.append("uses no W_query, W_key, W_value")
    if variant.unnormalised:
        lines.append(f"unnormalised: {', '.join(variant.unnormalised)} (need not sum to 1)")
    return lines
