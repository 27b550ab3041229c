"""How long one save of the progress file takes when it holds 100,000 lessons (about 27 MB).

    python benchmarks/progress_save.py              # the README table (a few minutes)
    python benchmarks/progress_save.py --quick      # 10,000 lessons, for a smoke run

Three ways, on copies of the same file in a temporary folder:

- before: ``tracer/session/progress.py`` as it was before the journal (commit
  :data:`BEFORE`, read with ``git show``): every save reads the whole document, merges and
  rewrites it whole (indented).
- whole: today's code made to rewrite the whole document at every save (as it still
  does for a small file, up to ``WHOLE_BELOW``), by raising that threshold.
- journal (after): one lesson's record appended to ``progress.json.journal``; the document
  is rewritten only when the journal has grown to half its size (that save is counted too).

Each save moves one lesson a step, as the app does when a learner presses →. Also shown:
opening the store (reading the document and replaying the journal), once per ``attn`` start.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from tracer.session import progress
from tracer.session.progress import LessonProgress, QuizAnswer

BEFORE = "f78c33e"
"""The last commit whose progress store rewrote the whole file at every save."""


def before_module() -> Any | None:
    """The progress module as it was at :data:`BEFORE`; None without git or that commit."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BEFORE}:tracer/session/progress.py"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("progress_before")
    module.__dict__["__name__"] = "progress_before"
    sys.modules["progress_before"] = module  # dataclasses look their module up
    exec(compile(source, "progress_before.py", "exec"), module.__dict__)
    return module


def make_document(lessons: int) -> str:
    records = {}
    for n in range(lessons):
        lesson = LessonProgress(
            step=n % 12,
            steps=12,
            seen=n % 12 + 1,
            title=f"Lesson number {n} of a long course",
            answers={f"quiz-{q}": QuizAnswer(str(q * 1.5), q % 2 == 0) for q in range(n % 2)},
            updated=1_700_000_000.0 + n,
        )
        records[f"/home/learner/course/{n:06d}_attention.yaml"] = lesson.as_json()
    return json.dumps({"version": 1, "lessons": records}, indent=1)


def time_saves(
    folder: Path, saves: int, whole: bool, module: Any = progress
) -> tuple[list[float], float]:
    """Milliseconds of each of ``saves`` saves, and of opening the store."""
    saved_threshold = progress.WHOLE_BELOW
    if whole:
        progress.WHOLE_BELOW = 1 << 62
    try:
        start = time.perf_counter()
        store = module.ProgressStore(folder)
        opened = (time.perf_counter() - start) * 1000
        keys = list(store.lessons)
        times = []
        for n in range(saves):
            key = keys[(n * 7919) % len(keys)]
            lesson = store.lessons[key]
            lesson.step = (lesson.step + 1) % 12
            start = time.perf_counter()
            warning = store.save(key, lesson)
            times.append((time.perf_counter() - start) * 1000)
            assert warning is None, warning
        return times, opened
    finally:
        progress.WHOLE_BELOW = saved_threshold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 lessons")
    parser.add_argument("--saves", type=int, default=0, help="saves timed in the journal way")
    args = parser.parse_args()
    lessons = 10_000 if args.quick else 100_000
    text = make_document(lessons)
    print(
        f"{platform.machine()}, Python {platform.python_version()}; "
        f"{lessons:,} lessons, {len(text.encode()) / 1e6:.1f} MB\n"
    )
    rows = []
    ways: list[tuple[str, bool, int, Any]] = []
    old = before_module()
    if old is not None:
        ways.append((f"before ({BEFORE})", True, 5, old))
    else:
        print(f"(no 'before' row: git or commit {BEFORE} not found)")
    ways.append(("whole", True, 5, progress))
    ways.append(("journal (after)", False, args.saves or 2000, progress))
    for name, whole, saves, module in ways:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            (folder / "progress.json").write_text(text, encoding="utf-8")
            times, opened = time_saves(folder, saves, whole, module)
            journal = folder / "progress.json.journal"
            left = journal.stat().st_size if journal.exists() else 0
        rows.append((name, saves, statistics.median(times), max(times), opened, left))
    print("| save | saves | median ms | slowest ms | open ms | journal left (KB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, saves, median, slowest, opened, left in rows:
        print(
            f"| {name} | {saves} | {median:.2f} | {slowest:.1f} | {opened:.0f} | {left / 1e3:.0f} |"
        )
    before, after = rows[0][2], rows[-1][2]
    print(f"\none save: {before / after:.0f}x faster with the journal")


if __name__ == "__main__":
    main()
