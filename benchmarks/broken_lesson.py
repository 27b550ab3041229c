"""How long ``attn lesson check`` takes to refuse a lesson whose structure is wrong, against
``python -c "import torch"``: a one-line structural error is reported before torch loads.

Each command runs as a whole process, in alternation with the others (so a slow spell of a
loaded machine falls on all of them alike); the table gives medians and the ratio to
importing torch, which is what compares between machines. Run it (not a test)::

    .venv/bin/python benchmarks/broken_lesson.py               # 7 rounds
    .venv/bin/python benchmarks/broken_lesson.py --rounds 5 --baseline /tmp/before

``--baseline DIR`` also runs each check with the ``tracer`` package in DIR first on the
path (``git archive COMMIT tracer | tar -x -C DIR``), so before and after are measured in
the same run. Target: each check within 0.3× ``import torch``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.3
LESSONS = {
    "unknown key in a step": ("title: T\nsummary: S\nsteps:\n  - narration: hi\n    colour: red\n"),
    "unknown key in a show": (
        "title: T\nsummary: S\nsteps:\n"
        "  - show:\n      variant: naive-loop\n      stage: scores\n      colour: red\n"
    ),
    "bad YAML (an unclosed list)": "title: T\nsummary: [S\nsteps:\n  - narration: hi\n",
}


def timed(argv: list[str], env: dict[str, str], cwd: str, expect: int) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != expect:
        raise SystemExit(
            f"{' '.join(argv)} exited {result.returncode}: {result.stderr.decode()[-500:]}"
        )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument(
        "--baseline", default="", help="also check with the tracer package in this folder"
    )
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "ATTN_DATA_DIR": folder}
        env.pop("PYTHONPATH", None)
        cases: list[tuple[str, list[str], dict[str, str], int]] = [
            ('`python -c "import torch"`', [python, "-c", "import torch"], env, 0)
        ]
        trees = ([("before", str(Path(args.baseline).resolve()))] if args.baseline else []) + [
            ("now", "")
        ]
        for name, text in LESSONS.items():
            path = Path(folder) / f"{name.split()[0]}_{len(cases)}.yaml"
            path.write_text(text, encoding="utf-8")
            for when, tree in trees:
                run_env = {**env, "PYTHONPATH": tree} if tree else env
                label = f"`attn lesson check`, {name}" + (f", {when}" if args.baseline else "")
                argv = [python, "-m", "tracer", "lesson", "check", str(path)]
                cases.append((label, argv, run_env, 1))
        times: dict[str, list[float]] = {label: [] for label, _, _, _ in cases}
        for _ in range(args.rounds):
            for label, argv, run_env, expect in cases:
                # Out of the checkout: ``-m`` puts the working folder first on the path.
                times[label].append(timed(argv, run_env, folder, expect))
    floor = statistics.median(times[cases[0][0]])
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {args.rounds} rounds")
    print()
    print("| command | median | vs import torch |")
    print("|---|---:|---:|")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"| {label} | {median:.2f} s | {median / floor:.2f}× |")
    print()
    print(f"target: each check within {TARGET}× import torch")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
