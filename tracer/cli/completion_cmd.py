"""``attn completion bash|zsh``: print a shell completion script, generated from the parser itself."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracer.cli.main import build_parser
from tracer.errors import EXIT_OK, UsageError

SHELLS = ("bash", "zsh")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "completion",
        help="print a tab-completion script for bash or zsh",
        description=(
            "Print a completion script for attn's commands and options. bash: "
            "'attn completion bash > ~/.local/share/bash-completion/completions/attn'; "
            "zsh: 'attn completion zsh > \"${fpath[1]}/_attn\"'; then open a new shell."
        ),
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        import shtab  # an optional extra: asked for here, where its absence is explained
    except ImportError:
        raise UsageError(
            "attn completion needs shtab: pip install 'attention-tracer[completion]'"
        ) from None
    script: str = shtab.complete(build_parser(), shell=args.shell)
    sys.stdout.write(script)
    return EXIT_OK
