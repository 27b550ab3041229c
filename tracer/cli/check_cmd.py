"""``attn check FILE.py --against VARIANT``: check a learner's own attention, stage by stage."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from tracer.cli.options import add_trace_options, load_host, trace_options
from tracer.errors import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError


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
        type=float,
        metavar="SECONDS",
        help="how long your code may run (default 5, or ATTN_CHECK_TIMEOUT)",
    )
    parser.add_argument(
        "--memory",
        type=int,
        metavar="MB",
        help="memory your code may take beyond torch's own (default 1024, or ATTN_CHECK_MEMORY_MB)",
    )
    add_trace_options(parser)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document instead of text"
    )
    parser.set_defaults(handler=run)


def look_again(
    args: argparse.Namespace, trace: Any, passed: Any, dropped: Any, undropped: Any
) -> tuple[str, Any] | None:
    """(why, result) of the first second look that finds a mistake the defaults hid (see
    tracer.learner.second_looks); None when the file passed nothing or all of them."""
    from tracer.learner.check import check
    from tracer.learner.isolation import Limits
    from tracer.learner.second_looks import EVAL_DROPOUT, LOOKS
    from tracer.runner import start_trace

    if passed is None:
        return None
    if (dropped is not None and not dropped.matches) or (
        undropped is not None and not undropped.matches
    ):
        return None
    host = load_host(args)
    limits = Limits.from_environment(args.timeout, args.memory)
    for _key, changes_of, why in LOOKS:
        changes = changes_of(trace, passed, passed, {})
        if changes is None:
            continue
        options = {k: v for k, v in changes.items() if k != EVAL_DROPOUT}
        try:
            reference = (
                start_trace(
                    args.against, replace(trace_options(args), **options), host
                ).run_to_end()
                if options
                else trace
            )
            again = check(
                Path(args.file),
                reference,
                function=args.function,
                limits=limits,
                eval_dropout=changes.get(EVAL_DROPOUT),
            )
        except UsageError:  # code that cannot take these sizes: nothing more to learn here
            continue
        if not again.matches:
            return why(trace, changes), again
    return None


def run(args: argparse.Namespace) -> int:
    from tracer.learner.check import (
        NOT_COMPARED,
        CheckResult,
        check,
        hidden_scaling_d_out,
        hides_dropout,
    )
    from tracer.learner.dropout import CHECK_RATE
    from tracer.learner.isolation import Limits
    from tracer.learner.loader import LearnerFailure
    from tracer.learner.report import check_json, dropout_line, format_check, learner_output
    from tracer.runner import start_trace

    if args.query is not None:
        raise UsageError("attn check compares every query at once; --query is for attn trace")
    limits = Limits.from_environment(args.timeout, args.memory)
    host = load_host(args)
    trace = start_trace(args.against, trace_options(args), host).run_to_end()
    second = None
    wider = None
    dropped = None
    undropped = None

    def check_again(**changes: Any) -> CheckResult:
        """The same file against a fresh run of the variant with some options changed."""
        again = start_trace(args.against, replace(trace_options(args), **changes), host)
        return check(Path(args.file), again.run_to_end(), function=args.function, limits=limits)

    try:
        result = check(Path(args.file), trace, function=args.function, limits=limits)
        wider = hidden_scaling_d_out(trace) if result.matches else None
        if wider is not None:
            # The defaults hide a missing √d_k (heads 1 wide): run again where they do not.
            try:
                second = check_again(d_out=wider)
            except UsageError:  # a class built with one width (a config, d_model) cannot widen
                wider = None
        passed = second if second is not None else result
        if passed.matches and hides_dropout(trace, result):
            # Dropout off hides a dropout that is ignored, misplaced or not rescaled.
            dropped = check_again(dropout=CHECK_RATE)
        if passed.matches and any(r.status == NOT_COMPARED for r in passed.stages):
            # Dropout on leaves the stages after the context uncompared (the masks differ):
            # compare them value by value with dropout off.
            if second is not None:
                undropped = check_again(dropout=0.0, d_out=wider)
            else:
                undropped = check_again(dropout=0.0)
        looked = look_again(args, trace, passed if passed.matches else None, dropped, undropped)
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
        return EXIT_USAGE
    final = second if second is not None else result
    if looked is not None:
        reason, again = looked
        if args.json:
            report = check_json(result)
            report["matches"] = False
            report["again"] = {"reason": reason, **check_json(again)}
            json.dump(report, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print(f"(your output matches with these options, but {reason})\n")
            print(format_check(again))
        return EXIT_PROBLEMS
    # A dropout check that could establish nothing says so, and does not overturn the verdict.
    failed_dropout = dropped is not None and not dropped.matches and bool(dropped.diagnoses)
    failed_after = undropped is not None and not undropped.matches
    if args.json:
        report = check_json(result)
        if second is not None:
            report["matches"] = second.matches
            report["second"] = {"d_out": wider, **check_json(second)}
        if dropped is not None:
            report["with_dropout"] = check_json(dropped)  # its "dropout" says the rate
            if failed_dropout:
                report["matches"] = False
        if undropped is not None:
            report["without_dropout"] = check_json(undropped)
            if failed_after:
                report["matches"] = False
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif second is not None and not second.matches:
        print(
            f"(with these options every head is 1 wide, so √d_k = 1 and a missing scale would "
            f"not show; checked again with --d-out {wider})\n"
        )
        print(format_check(second))
    elif failed_dropout:
        assert dropped is not None
        print(
            f"(with --dropout 0 your output matches; dropout off would hide a mistake in your "
            f"dropout, so it was checked again with --dropout {CHECK_RATE:g})\n"
        )
        print(format_check(dropped))
    elif failed_after:
        assert undropped is not None
        print(
            f"(with --dropout {args.dropout:g} your dropout has the right structure, but the "
            "stages after the context cannot be compared while the masks differ; checked again "
            "with --dropout 0)\n"
        )
        print(format_check(undropped))
    else:
        print(format_check(final))
        if dropped is not None:
            print()
            print(dropout_line(dropped, CHECK_RATE))
        if undropped is not None:
            print()
            print("checked again with --dropout 0: the stages after the context match too.")
    if failed_dropout or failed_after:
        return EXIT_PROBLEMS
    return EXIT_OK if final.matches else EXIT_PROBLEMS
