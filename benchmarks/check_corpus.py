"""How well ``attn check`` judges realistic learner files: verdict, bug line, mistake.

    python benchmarks/check_corpus.py              # every labelled file under tests/learner
    python benchmarks/check_corpus.py -v           # and one line per file
    python benchmarks/check_corpus.py --only new   # only the files in the new styles
    python benchmarks/check_corpus.py --only wild  # only the third corpus (issue 34's styles)

Each corpus file ends with a label written by hand, next to the code it describes:

    # expect: --against masked -> mask-future at 12
    # expect: --against trainable --d-out 4 -> ok

The file is checked with exactly those options (``attn check FILE OPTIONS --json``,
in this process; the learner's code runs in its sandbox as always). Scored:

- verdict: "ok" for correct files, not ok for buggy ones (exit 0 against 1);
- line: the first diagnosis names the labelled line or the one after it;
- mistake: the first diagnosis has the labelled code;
- tool errors: exit statuses other than 0 and 1, or a traceback on stderr.

When a file passes and a second configuration finds the mistake (heads wider
than 1, dropout on, eval mode, moving maxima, more heads than key/value heads),
that configuration's diagnosis is the one scored. Two corpora are scored apart:
the first one (``corpus``, ``shapes``, ``realistic``) and the learner code in
the styles it lacked (``styles``: numpy, nn.MultiheadAttention, config classes,
the Annotated Transformer, sliding-window, grouped-query, KV-cache, online softmax),
and a third (``wild``): torch.func.vmap, dataclass and dict outputs, bmm with float
masks, timm's fused qkv, square nn.Parameter weights, a Llama ModelArgs class, unfold
windows, prefill-then-decode caches, SGD training and cross-attention, whose bugs
are mostly outside the variants' catalogues (named from what the numbers show).
The median wall time per check is printed with each table (it includes the re-checks).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("tests/learner/corpus", "tests/learner/shapes", "tests/learner/realistic")
NEW_FOLDERS = ("tests/learner/styles",)
"""Learner code in the styles the first corpus lacks (issue 24): scored separately."""
WILD_FOLDERS = ("tests/learner/wild",)
"""Learner code in the styles of issue 34, with mistakes outside the catalogues."""
LABEL = re.compile(
    r"^# expect: (?P<options>.+?) -> (?:(?P<ok>ok)|(?P<code>[\w-]+) at (?P<line>\d+))$"
)


@dataclass
class Case:
    path: Path
    options: list[str]
    code: str | None
    """None for a correct file."""
    line: int | None


@dataclass
class Outcome:
    case: Case
    status: int
    codes: list[str]
    line: int | None
    tool_error: bool
    seconds: float = 0.0


def cases(folders: tuple[str, ...] = FOLDERS) -> list[Case]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).glob("*.py")):
            for text in path.read_text(encoding="utf-8").splitlines():
                match = LABEL.match(text)
                if match:
                    line = match.group("line")
                    found.append(
                        Case(
                            path,
                            shlex.split(match.group("options")),
                            match.group("code"),
                            int(line) if line else None,
                        )
                    )
    return found


def run(case: Case) -> Outcome:
    from tracer.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(["check", str(case.path), *case.options, "--json"])
        except SystemExit as exit:
            status = int(exit.code or 0)
    codes: list[str] = []
    line = None
    try:
        report = json.loads(out.getvalue())
    except json.JSONDecodeError:
        report = {}
    report = failing_configuration(report)
    diagnoses = report.get("diagnoses") or []
    codes = [d["code"] for d in diagnoses]
    if diagnoses:
        line = diagnoses[0]["line"]
    seconds = time.perf_counter() - started
    tool_error = status not in (0, 1) or "Traceback" in err.getvalue()
    return Outcome(case, status, codes, line, tool_error, seconds)


def failing_configuration(report: dict) -> dict:
    """The report of the configuration that found the problem: the first, or a second run
    (a wider head, dropout on or off) that the first configuration would have hidden."""
    for key in (
        "second",
        "with_dropout",
        "without_dropout",
        "moving_maximum",
        "shorter_window",
        "grouped_heads",
        "eval_mode",
    ):
        if key in report and not report[key]["matches"] and report[key]["diagnoses"]:
            return report[key]
    return report


def table(title: str, outcomes: list[Outcome]) -> None:
    """The scores of one corpus, as a Markdown table."""
    buggy = [o for o in outcomes if o.case.code is not None]
    correct = [o for o in outcomes if o.case.code is None]
    verdicts = sum((o.status == 0) == (o.case.code is None) for o in outcomes)
    passed = sum(o.status == 0 for o in buggy)
    refused = sum(o.status != 0 for o in correct)
    lines = sum(
        o.line is not None and o.case.line is not None and o.line in (o.case.line, o.case.line + 1)
        for o in buggy
    )
    mistakes = sum(bool(o.codes) and o.codes[0] == o.case.code for o in buggy)
    named = sum(bool(o.codes) for o in buggy)
    errors = sum(o.tool_error for o in outcomes)
    share = max(len(buggy), 1)
    print(f"{title}: {len(outcomes)} files ({len(buggy)} with a mistake)")
    print()
    print("| measure | right | share |")
    print("|---|---:|---:|")
    print(
        f"| verdict (ok / not ok) | {verdicts}/{len(outcomes)} | "
        f"{verdicts / max(len(outcomes), 1):.0%} |"
    )
    print(f"| buggy files passed as correct | {passed} | |")
    print(f"| correct files refused | {refused} | |")
    print(f"| bug line (or the next) | {lines}/{len(buggy)} | {lines / share:.0%} |")
    print(f"| the labelled mistake named | {mistakes}/{len(buggy)} | {mistakes / share:.0%} |")
    print(f"| a mistake named at all | {named}/{len(buggy)} | {named / share:.0%} |")
    print(f"| tool errors (exit 2/3, traceback) | {errors} | |")
    if outcomes:
        median = statistics.median(o.seconds for o in outcomes)
        print(f"| median time per check (s, re-checks included) | {median:.2f} | |")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per file")
    parser.add_argument(
        "--only",
        choices=("old", "new", "wild"),
        help="score only the first corpus, the new styles or the third corpus",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"Python {sys.version.split()[0]}")
    print()
    corpora = [
        ("old", "the first corpus", FOLDERS),
        ("new", "the new styles", NEW_FOLDERS),
        ("wild", "the third corpus (vmap, dataclasses, Llama, decode, SGD, cross)", WILD_FOLDERS),
    ]
    for key, title, folders in corpora:
        if args.only and args.only != key:
            continue
        outcomes = []
        for case in cases(folders):
            outcome = run(case)
            outcomes.append(outcome)
            if args.verbose:
                expected = "ok" if case.code is None else f"{case.code}@{case.line}"
                codes = ",".join(outcome.codes) or "-"
                got = "ok" if outcome.status == 0 else f"{codes}@{outcome.line}"
                print(
                    f"  {case.path.relative_to(ROOT)}  expected {expected}  got {got} "
                    f"(exit {outcome.status})"
                )
        table(title, outcomes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
