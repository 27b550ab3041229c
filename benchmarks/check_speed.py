"""How long a learner waits for ``attn check`` and for a watch re-check, measured side by side.

    .venv/bin/python benchmarks/check_speed.py              # 5 rounds (about a minute)
    .venv/bin/python benchmarks/check_speed.py --rounds 9

(a) one ``attn check FILE --against VARIANT`` of a correct file, the whole process, against a bare
    ``python -c "import torch"`` run in alternation with it (target: at most 1.6x);
(b) a re-check in ``attn exercises watch`` after a save: the exercise is checked once (the
    session's warm sandbox is then running), the file is saved again and checked again; the
    time from the save to the verdict (target: at most 0.5 s).

Each row is the median of the rounds; the commands alternate so that load from other
processes on a shared machine falls on all of them alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "learner" / "corpus"
SOLUTIONS = ROOT / "tests" / "learner" / "solutions"
ATTN = Path(sys.executable).with_name("attn")

CHECKS = [
    ("vectorized", CORPUS / "correct_vectorized.py"),
    ("trainable", CORPUS / "correct_trainable.py"),
    ("multihead", CORPUS / "correct_multihead.py"),
]
"""(variant, file): multihead passes and is checked again at twice the width (one re-check)."""


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def whole_commands(rounds: int) -> list[tuple[str, float, float]]:
    """(label, median seconds, ratio to import torch) for each attn check."""
    floor_command = [sys.executable, "-c", "import torch"]
    commands = [[str(ATTN), "check", str(path), "--against", variant] for variant, path in CHECKS]
    floor: list[float] = []
    times: list[list[float]] = [[] for _ in commands]
    wall(floor_command)  # the first start reads everything from disk: not counted
    for _ in range(rounds):
        floor.append(wall(floor_command))
        for command, found in zip(commands, times, strict=True):
            found.append(wall(command))
    base = statistics.median(floor)
    rows = [('python -c "import torch"', base, 1.0)]
    for (variant, path), found in zip(CHECKS, times, strict=True):
        median = statistics.median(found)
        rows.append((f"attn check {path.name} --against {variant}", median, median / base))
    return rows


def watch_rechecks(rounds: int) -> list[tuple[str, float]]:
    """(label, median seconds from a save to the verdict) in one watch session."""
    from tracer.learner.exercises.workbook import EXERCISES, check_exercise

    rows = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for number in (3, 5):
            exercise = EXERCISES[number - 1]
            path = folder / exercise.filename
            shutil.copy(SOLUTIONS / exercise.filename, path)
            assert check_exercise(folder, exercise).status == 0  # the session's first check
            found = []
            for _ in range(rounds):
                start = time.perf_counter()
                path.write_text(path.read_text())  # the save
                os.utime(path)
                outcome = check_exercise(folder, exercise)
                found.append(time.perf_counter() - start)
                assert outcome.status == 0, outcome.text
            rows.append((f"re-check of {exercise.filename} (against {exercise.variant})", found))
    return [(label, statistics.median(found)) for label, found in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{platform.node()}: {os.cpu_count()} cores, python {platform.python_version()}")
    print(f"median of {args.rounds} rounds, run in alternation\n")
    print(f"{'(a) whole command':<62} {'seconds':>8} {'ratio':>6}")
    for label, seconds, ratio in whole_commands(args.rounds):
        print(f"{label:<62} {seconds:8.2f} {ratio:5.2f}x")
    print(f"\n{'(b) attn exercises watch, save to verdict':<62} {'seconds':>8}")
    for label, seconds in watch_rechecks(args.rounds):
        print(f"{label:<62} {seconds:8.3f}")


if __name__ == "__main__":
    main()
