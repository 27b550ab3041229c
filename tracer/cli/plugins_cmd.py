"""``attn plugins``: every plugin, where it came from, its variants, and any failure."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tracer.cli.channels import private_stdout, write_document
from tracer.cli.options import add_plugin_options
from tracer.errors import EXIT_OK
from tracer.options import describe
from tracer.plugin_host import PluginHost
from tracer.sanitize import message


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
        for warning in record.warnings:
            say(f"  warning: {warning}")
        if record.error:
            say(f"  FAILED: {record.error}")
    return EXIT_OK
