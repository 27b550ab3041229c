"""``attn check FILE.py --against VARIANT``: check a learner's own attention, stage by stage."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.cli.trace_arguments import add_trace_options, load_host, trace_options
from tracer.environment import MEBIBYTES, SECONDS, parse_limit
from tracer.errors import EXIT_OK, EXIT_PROBLEMS, UsageError
from tracer.tracing.runner import start_trace

if TYPE_CHECKING:
    from tracer.tracing import Trace


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "check",
        help="check your own attention function against a variant",
        description=(
            "Run `def attention(inputs, W_query, W_key, W_value)` from FILE (for naive-loop and "
            "vectorized: `def attention(inputs)`), or the file's one function or nn.Module "
            "class, on the variant's inputs and weights, compare its output and intermediate "
            "tensors with the variant's stages, and explain the first difference. Your code "
            "runs in a separate process with a time and a memory limit. Dropout is checked by "
            "its structure (each weight 0 or w/(1-p)), since your mask is not the reference's; "
            "code that takes a dropout rate and passes with --dropout 0 is checked again at 0.5."
        ),
        epilog=(
            "Exit status: 0 output matches, 1 it does not, 2 the file itself fails "
            "(or runs out of time or memory)."
        ),
    )
    parser.add_argument("file", metavar="FILE.py", help="your Python file")
    parser.add_argument(
        "--against", required=True, metavar="VARIANT", help="the variant to compare with"
    )
    parser.add_argument(
        "--function",
        metavar="NAME",
        help="the function, class or module in FILE to check (default: attention, or the only one)",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        help="how long your code may run (default 5, or ATTN_CHECK_TIMEOUT; inf: no limit)",
    )
    parser.add_argument(
        "--memory",
        metavar="MB",
        help=(
            "memory your code may take beyond torch's own, in MiB "
            "(default 1024, or ATTN_CHECK_MEMORY_MB; inf: no limit)"
        ),
    )
    add_trace_options(parser)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document instead of text"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # The sandbox's modules (subprocess, the server, the learner's loader) load when
    # `attn check` runs: `attn --help` imports this module and stays quick.
    from tracer.learner.isolation import Limits, shared_server
    from tracer.learner.loader import LearnerFailure

    if args.query is not None:
        raise UsageError("attn check compares every query at once; --query is for attn trace")
    timeout = None if args.timeout is None else parse_limit("--timeout", args.timeout, SECONDS)
    memory = None if args.memory is None else parse_limit("--memory", args.memory, MEBIBYTES)
    limits = Limits.from_environment(timeout, None if memory is None else int(memory))
    # The sandbox server imports torch while this process computes the reference.
    shared_server().spawn()

    # These import torch: not before the sandbox server is on its way, never for `attn --help`.
    from tracer.learner.check import judge, reference_host
    from tracer.learner.report import check_json, format_judgement, learner_output

    host = reference_host(args.against, lambda: load_host(args))
    trace = start_trace(args.against, trace_options(args, host), host, check=True).run_to_end()

    def rerun(changes: dict[str, Any]) -> Trace:
        """A fresh run of the variant with some options changed."""
        return start_trace(
            args.against, replace(trace_options(args, host), **changes), host, check=True
        ).run_to_end()

    try:
        judgement = judge(Path(args.file), trace, rerun, function=args.function, limits=limits)
    except LearnerFailure as failure:
        if failure.output and not args.json:
            sys.stderr.write(learner_output(failure.output) + "\n")
        sys.stderr.write(failure.text)
        if args.json:
            json.dump(
                {
                    "file": args.file,
                    "variant": args.against,
                    "error": failure.text,
                    "output": failure.output,
                },
                sys.stdout,
            )
            sys.stdout.write("\n")
        return failure.exit_status  # 1: an exercise not written yet; 2: the code failed
    failed = judgement.failed
    if args.json:
        report = check_json(judgement.first)
        for rechecked in judgement.rechecks:
            if rechecked.recheck.replaces:
                report["matches"] = rechecked.result.matches
                report[rechecked.recheck.key] = {
                    **rechecked.changes,
                    **check_json(rechecked.result),
                }
            else:
                report[rechecked.recheck.key] = check_json(rechecked.result)
        if failed is not None:
            report["matches"] = False
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(format_judgement(judgement))
    return EXIT_OK if judgement.matches else EXIT_PROBLEMS
