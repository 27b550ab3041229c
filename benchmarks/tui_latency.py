"""How fast the app paints and answers keys, measured the way a person sees it: through a terminal.

Each app runs in a pseudo-terminal (120 × 40). We time

* launch → first painted frame: from starting the process until the terminal
  receives text that only the first frame contains, compared with a bare
  Textual app (a header, a static and a footer) measured the same way;
* key press → repainted frame: from writing a key to the terminal until the
  first output for it arrives (the new step starts to show), and until that
  output burst ends ("settled": the terminal has then been quiet for ``QUIET``
  seconds, a wait that is not counted). Medians of many presses, compared
  with the floor: a bare Textual app whose key press rewrites two texts
  (about a screenful), measured the same way in the same run.

A third table times each kind of step: a lesson with one step of each kind (a show, a
show of tables derived with ``then``, a loop with six sub-steps, a compare, a quiz, a
checkpoint; written to the temporary folder) is stepped through and back ``KIND_WALKS``
times, and each press is counted for the kind of step it lands on; each kind's 90th
percentile (settled) is compared with the floor's, measured in the same run (target: within
2.5×).

An app is ready for key presses once its footer is drawn and the terminal has
then been quiet for two seconds (the loading indicator moves until torch is in);
text markers are not waited for, because a partial repaint may write a line
in pieces.

Run it (not a test; numbers depend on the machine)::

    .venv/bin/python benchmarks/tui_latency.py            # all measurements
    .venv/bin/python benchmarks/tui_latency.py --runs 3   # fewer launches
    .venv/bin/python benchmarks/tui_latency.py --only lesson,vectorized --fps 60,240

It writes temporary 1,024- and 4,096-token inputs files and a fresh temporary
ATTN_DATA_DIR for every launch (a lesson never resumes an earlier run's place),
so your own progress is never touched. ``--only TEXT`` runs the
key-press cases whose title contains TEXT (and skips the first-frame runs);
``--fps 60,240`` runs each key-press case at each of those Textual frame caps in
turn (the app's own default is 240), so the two are compared in one run.
``--rounds N`` runs the key-press cases N times over, in turn, and pools each case's
presses: one run's median moves with the machine about as much as the targets differ
from the results, and twelve presses of a lesson make a coarse median::

    .venv/bin/python benchmarks/tui_latency.py --only "naive-loop, 6|lesson" --rounds 4

(``lesson`` also selects the step-kinds case; ``--only "every step kind"`` runs it alone,
with the floor.) ``TUI_LATENCY_DEBUG=1`` prints what the terminal last showed when a first
key press draws nothing (it is pressed again, up to three times: the app may still be loading).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import math
import os
import pty
import random
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

from tracer.lessons.loader import shipped_dir

COLUMNS, ROWS = 120, 40
FLOOR = "floor: bare Textual app, a key rewrites two texts"
QUIET = 0.05
"""Seconds of silence that end an output burst."""
TIMEOUT = 60.0

BARE_APP = textwrap.dedent(
    """
    from textual.app import App
    from textual.widgets import Footer, Header, Static

    class Bare(App):
        def compose(self):
            yield Header()
            yield Static("BareAppReady")
            yield Footer()

    Bare().run()
    """
)

BARE_KEYS_APP = textwrap.dedent(
    """
    from textual.app import App
    from textual.containers import Horizontal
    from textual.widgets import Footer, Header, Static

    class BareKeys(App):
        BINDINGS = [("right", "next", "Next")]
        step = 0

        def compose(self):
            yield Header()
            with Horizontal():
                yield Static("BareAppReady", id="left")
                yield Static("", id="right")
            yield Footer()

        def action_next(self):
            self.step += 1
            text = "\\n".join(f"line {n} of step {self.step} " + "x" * (n % 40) for n in range(30))
            self.query_one("#left", Static).update(text)
            self.query_one("#right", Static).update(text.upper())

    BareKeys().run()
    """
)
EVERY_KIND = textwrap.dedent(
    """
    title: Every step kind
    summary: One step of each kind, to time the key presses that reach them.
    steps:
      - narration: The steps that follow are one of each kind.
      - show:
          variant: vectorized
          stage: scores
          caption: The scores.
      - show:
          variant: vectorized
          stage: scores
          then: [{pick: journey}]
          caption: One row of the scores, derived from the table.
      - loop:
          variant: naive-loop
          stage: scores
          query: journey
          caption: One dot product per sub-step.
      - compare:
          stage: scores
          left: {variant: naive-loop, label: nested loops}
          right: {variant: vectorized, label: one matrix product}
          caption: The same scores, two ways.
      - quiz:
          id: biggest
          question: Which token is best aligned with journey?
          show: {variant: naive-loop, stage: inputs}
          choices: [Your, journey, starts, step]
          answer: {variant: naive-loop, stage: scores, then: [{pick: journey}, argmax]}
      - checkpoint:
          title: Done
          points: [One step of each kind.]
    """
)
"""A lesson with one step of each kind (the loop has six sub-steps): the "step kinds" case."""
KIND_PRESSES: list[tuple[bytes, str]] = [
    *[(b"\x1b[C", kind) for kind in ("show", "derived tables", "loop (entering it)")],
    *[(b"\x1b[C", "loop sub-step")] * 5,
    *[(b"\x1b[C", kind) for kind in ("compare", "quiz", "checkpoint")],
    *[(b"\x1b[D", kind) for kind in ("quiz", "compare", "loop (entering it)")],  # its last sub-step
    *[(b"\x1b[D", "loop sub-step")] * 5,
    *[(b"\x1b[D", kind) for kind in ("derived tables", "show", "narration")],
]
"""Through :data:`EVERY_KIND` and back, each press labelled with the kind of step it lands on."""
KINDS = "lesson, every step kind (through and back)"
KIND_WALKS = 5
"""Walks through the every-kind lesson and back in one launch: ten presses of each kind a
round, so that a kind's 90th percentile (nearest rank) is its second slowest press, not its
slowest (with two walks, four presses, it was the slowest, against the floor's 23rd of 25)."""
KIND_TARGET = 2.5
"""Each kind's 90th percentile, settled, within this many times the floor's."""
READY_QUIET = 2.0
"""Seconds of silence after the footer that mean an app has finished loading.

Importing torch in the loading worker can hold the GIL long enough to stop the
loading indicator for about a second, so a shorter silence can come too early."""


class Terminal:
    """A child process on a pseudo-terminal, with everything it writes collected."""

    def __init__(self, argv: Sequence[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child
            # Out of the checkout: ``python -m tracer`` puts the working folder first on the
            # path, which would shadow a --baseline tree given on PYTHONPATH.
            os.chdir(env["ATTN_DATA_DIR"])
            os.execvpe(argv[0], list(argv), env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.output = bytearray()

    def read(self, timeout: float) -> float | None:
        """Read what is available within ``timeout``; the time of the read, or None."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return None
        try:
            chunk = os.read(self.fd, 1 << 16)
        except OSError:
            return None
        self.output.extend(chunk)
        return time.perf_counter()

    def wait_for(self, marker: bytes, start: int = 0) -> float:
        """Seconds from launch until ``marker`` appears in the output (after offset ``start``)."""
        deadline = time.perf_counter() + TIMEOUT
        while marker not in self.output[start:]:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{marker!r} never appeared")
            self.read(0.5)
        return time.perf_counter() - self.started

    def ready(self, footer: bytes) -> float:
        """Wait for ``footer``, then for ``READY_QUIET`` s of silence; seconds to the last output."""
        self.wait_for(footer)
        last = time.perf_counter()
        deadline = last + TIMEOUT
        while time.perf_counter() - last < READY_QUIET:
            if time.perf_counter() > deadline:
                raise TimeoutError("the app never stopped drawing")
            got = self.read(0.2)
            if got is not None:
                last = got
        return last - self.started

    def settle(self) -> None:
        while self.read(QUIET * 2) is not None:
            pass

    def press(self, key: bytes) -> tuple[float, float]:
        """Seconds from writing ``key`` to the first output it caused, and to the end of it.

        The first is when the terminal starts showing the new step; the second
        includes any follow-up frames (a scrollbar, the footer) in the same burst.
        """
        self.settle()
        sent = time.perf_counter()
        os.write(self.fd, key)
        first = last = None
        deadline = sent + TIMEOUT
        while time.perf_counter() < deadline:
            got = self.read(QUIET if last is not None else 5.0)
            if got is None:
                break
            first = first if first is not None else got
            last = got
        if first is None or last is None:
            raise NoRepaint("no repaint after a key press")
        return first - sent, last - sent

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        try:
            while self.read(0.2) is not None:
                pass
        finally:
            os.close(self.fd)
            os.waitpid(self.pid, 0)


def environment(data_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        COLUMNS=str(COLUMNS),
        LINES=str(ROWS),
        ATTN_DATA_DIR=data_dir,
        TEXTUAL_ANIMATIONS="none",
    )
    env.pop("ATTN_KEYMAP", None)
    return env


def first_frame(argv: Sequence[str], marker: bytes, env: dict[str, str]) -> float:
    terminal = Terminal(argv, env)
    try:
        return terminal.wait_for(marker)
    finally:
        terminal.close()


def loaded(argv: Sequence[str], marker: bytes, env: dict[str, str]) -> float:
    """Launch → ``marker`` (drawn once the tensors are on screen).

    At Textual's default 60 frames a second, where a new title arrives whole (a
    faster repaint may write it in pieces); the frame cap does not change how
    long torch and the plugins take to load.
    """
    terminal = Terminal(argv, fresh({**env, "TEXTUAL_FPS": "60"}))
    try:
        return terminal.wait_for(marker)
    finally:
        terminal.close()


class NoRepaint(TimeoutError):
    """A key press that drew nothing within five seconds."""


def key_latency(
    argv: Sequence[str], footer: bytes, keys: Sequence[bytes], env: dict[str, str]
) -> list[tuple[float, float]]:
    terminal = Terminal(argv, fresh(env))
    try:
        terminal.ready(footer)
        times = []
        for attempt in range(3):
            try:
                times.append(terminal.press(keys[0]))
                break
            except NoRepaint:
                if os.environ.get("TUI_LATENCY_DEBUG"):
                    tail = bytes(terminal.output[-3000:]).decode("utf-8", "replace")
                    print(
                        f"--- {argv}: no repaint; the terminal's last output:\n{tail}",
                        file=sys.stderr,
                    )
                # On a loaded machine the app can fall silent for READY_QUIET while torch
                # is still loading: its first key then finds no step to move. Not counted.
                if attempt == 2:
                    raise
                terminal.ready(footer)
        return times + [terminal.press(key) for key in keys[1:]]
    finally:
        terminal.close()


def fresh(env: dict[str, str]) -> dict[str, str]:
    """``env`` with a new, empty ATTN_DATA_DIR beside the run's (no resumed lesson)."""
    folder = tempfile.mkdtemp(dir=env["ATTN_DATA_DIR"])
    return {**env, "ATTN_DATA_DIR": folder}


def big_inputs(folder: Path, count: int = 1024) -> Path:
    rng = random.Random(1)
    path = folder / f"tokens{count}.yaml"
    lines = ["tokens: [" + ", ".join(f"t{i}" for i in range(count)) + "]", "embeddings:"]
    lines += [
        "  - [" + ", ".join(f"{rng.random():.3f}" for _ in range(3)) + "]" for _ in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="launches per app (default 5)")
    parser.add_argument("--presses", type=int, default=25, help="key presses per case (default 25)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the key-press cases this many times over, alternately, pooling their presses",
    )
    parser.add_argument(
        "--only",
        default="",
        help="only the key-press cases whose title has one of these (a,b, or a|b where a title "
        "has a comma)",
    )
    parser.add_argument(
        "--fps",
        default="",
        help="run the key-press cases at each of these TEXTUAL_FPS values, side by side (60,240)",
    )
    parser.add_argument(
        "--baseline",
        default="",
        help="also run each key-press case with the tracer package in this folder first on the "
        "path (e.g. `git archive main tracer | tar -x -C DIR`), before ours: before/after side by side",
    )
    args = parser.parse_args()
    # "|" separates where a title's own comma would split ("lesson|naive-loop, 6").
    only = [text for text in args.only.split("|" if "|" in args.only else ",") if text]
    rates = [rate.strip() for rate in args.fps.split(",") if rate.strip()] or [None]
    python = sys.executable
    right, left = b"\x1b[C", b"\x1b[D"
    with tempfile.TemporaryDirectory() as folder:
        env = environment(folder)
        bare = Path(folder) / "bare_app.py"
        bare.write_text(BARE_APP, encoding="utf-8")
        bare_keys = Path(folder) / "bare_keys_app.py"
        bare_keys.write_text(BARE_KEYS_APP, encoding="utf-8")
        big = big_inputs(Path(folder))
        huge = big_inputs(Path(folder), 4096)
        every_kind = Path(folder) / "every_kind.yaml"
        every_kind.write_text(EVERY_KIND.lstrip(), encoding="utf-8")
        explore = [python, "-m", "tracer", "explore", "naive-loop"]
        launches = 0 if only else args.runs

        bare_times = [
            first_frame([python, str(bare)], b"BareAppReady", env) for _ in range(launches)
        ]
        ours = [first_frame(explore, b"Loading", env) for _ in range(launches)]
        picker = [first_frame([python, "-m", "tracer"], b"Choose", env) for _ in range(launches)]
        ready = [loaded(explore, b"Token embeddings", env) for _ in range(launches // 2 or 1)]

        cases: list[tuple[str, list[str], bytes, bytes | list[bytes]]] = [
            (FLOOR, [python, str(bare_keys)], b"Next", right),
            ("explore naive-loop, 6 tokens", explore, b"Quit", right),
            (
                "lesson 01_dot_products, 6 tokens",
                # By path: a --baseline tree has no shipped lessons of its own to name.
                [python, "-m", "tracer", "lesson", str(shipped_dir() / "01_dot_products.yaml")],
                b"Quit",
                right,
            ),
            (
                KINDS,
                [python, "-m", "tracer", "lesson", str(every_kind)],
                b"Quit",
                [key for key, _ in KIND_PRESSES] * KIND_WALKS,
            ),
            (
                "explore naive-loop, 1,024 tokens (loop sub-steps)",
                [*explore, "--inputs", str(big)],
                b"Quit",
                right,
            ),
            (
                "explore trainable, 1,024 tokens (1,024×1,024 stages)",
                [python, "-m", "tracer", "explore", "trainable", "--inputs", str(big)],
                b"Quit",
                right,
            ),
            (
                "explore vectorized, 4,096 tokens (overview of 4,096×4,096 stages)",
                [python, "-m", "tracer", "explore", "vectorized", "--inputs", str(huge)],
                b"Quit",
                # Four steps only: onto the scores, then back and forth between the two
                # 4,096 × 4,096 stages (a key past the last step repaints nothing).
                [right, right, left, right, left, right, left, right],
            ),
        ]
        trees = [""] + ([str(Path(args.baseline).resolve())] if args.baseline else [])
        # Each case at each rate, in turn; with a baseline, its run right before ours. With
        # --rounds N the whole list runs N times over, and each row pools its presses from
        # every round: the floor and the cases are measured alternately, so a slow spell of
        # the machine falls on all of them alike.
        runs = [
            (rate, tree, case)
            for case in cases
            for rate in rates
            for tree in reversed(trees)
            if not (tree and case[0] == FLOOR)
        ]
        pooled: dict[tuple[str | None, str], list[tuple[float, float]]] = {}
        for _round in range(args.rounds):
            for rate, tree, (title, argv, marker, key) in runs:
                if only and title != FLOOR and not any(text in title for text in only):
                    continue
                run_env = env if rate is None else {**env, "TEXTUAL_FPS": rate}
                if tree:
                    run_env = {**run_env, "PYTHONPATH": tree}
                    title = f"before: {title}"
                presses = args.presses
                if "lesson" in title:
                    presses = min(presses, 12)  # the lesson has a fixed number of steps
                if "trainable" in title:
                    presses = min(presses, 8)
                keys = key if isinstance(key, list) else [key] * presses
                label = title if rate is None else f"{title} at {rate} fps"
                times = key_latency(argv, marker, keys, run_env)
                pooled.setdefault((rate, label), []).extend(times)
        rows = [
            (
                rate,
                label,
                statistics.median(t[0] for t in times),
                statistics.median(t[1] for t in times),
                max(t[1] for t in times),
                len(times),
            )
            for (rate, label), times in pooled.items()
        ]

        kinds = {(rate, label): times for (rate, label), times in pooled.items() if KINDS in label}
        floor_times = {
            rate: [t[1] for t in times]
            for (rate, label), times in pooled.items()
            if label.startswith(FLOOR)
        }

    print(f"terminal {COLUMNS}×{ROWS}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print()
    if not only:
        first_frames(bare_times, ours, picker, ready)
    # Each row against the floor measured at its own frame cap.
    floors = {rate: median for rate, title, _, median, _, _ in rows if title.startswith(FLOOR)}
    print(
        "| key press → repainted frame | median, first repaint | median, settled | "
        "settled vs floor | max, settled | presses |"
    )
    print("|---|---|---|---|---|---|")
    for rate, title, first, median, worst, count in rows:
        print(
            f"| {title} | {first * 1000:.1f} ms | {median * 1000:.1f} ms | "
            f"{median / floors[rate]:.2f}× | {worst * 1000:.1f} ms | {count} |"
        )
    if kinds:
        print()
        step_kinds(kinds, floor_times)
    return 0


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank: a value that was measured)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def step_kinds(
    kinds: dict[tuple[str | None, str], list[tuple[float, float]]],
    floors: dict[str | None, list[float]],
) -> None:
    """Each step kind's key presses (the kind of step a press lands on): 90th percentile,
    settled, against the floor's measured in the same run."""
    print(
        "| key press lands on | presses | median, settled | p90, settled | "
        "p90 vs floor p90 | p90 vs floor median |"
    )
    print("|---|---|---|---|---|---|")
    for (rate, label), times in kinds.items():
        floor = floors[rate]
        floor_p90, floor_median = percentile(floor, 0.9), statistics.median(floor)
        at = "" if rate is None else f" at {rate} fps"
        before = "before: " if label.startswith("before: ") else ""
        print(
            f"| floor{at} | {len(floor)} | {floor_median * 1000:.1f} ms | "
            f"{floor_p90 * 1000:.1f} ms | 1.00× | {floor_p90 / floor_median:.2f}× |"
        )
        labels = [kind for _, kind in KIND_PRESSES]
        by_kind: dict[str, list[float]] = {}
        for index, (_, settled) in enumerate(times):
            by_kind.setdefault(labels[index % len(labels)], []).append(settled)
        for kind, values in by_kind.items():
            p90 = percentile(values, 0.9)
            mark = "" if p90 <= KIND_TARGET * floor_p90 else " (over)"
            print(
                f"| {before}{kind}{at} | {len(values)} | {statistics.median(values) * 1000:.1f} ms | "
                f"{p90 * 1000:.1f} ms | {p90 / floor_p90:.2f}×{mark} | {p90 / floor_median:.2f}× |"
            )
    print()
    print(f"target: each kind's p90 within {KIND_TARGET}× the floor's p90")


def first_frames(
    bare_times: list[float], ours: list[float], picker: list[float], ready: list[float]
) -> None:
    bare_median, ours_median = statistics.median(bare_times), statistics.median(ours)
    print("| measure | median | ratio |")
    print("|---|---|---|")
    print(
        f"| bare Textual app (header, static, footer): first frame | {bare_median * 1000:.0f} ms | 1.00× |"
    )
    print(
        f"| `attn explore naive-loop`: first frame (torch still loading) | {ours_median * 1000:.0f} ms"
        f" | {ours_median / bare_median:.2f}× |"
    )
    picker_median = statistics.median(picker)
    print(
        f"| `attn` (lesson picker): first frame | {picker_median * 1000:.0f} ms"
        f" | {picker_median / bare_median:.2f}× |"
    )
    print(
        f"| `attn explore naive-loop`: tensors on screen (torch loaded) | "
        f"{statistics.median(ready) * 1000:.0f} ms | {statistics.median(ready) / bare_median:.2f}× |"
    )
    print()


if __name__ == "__main__":
    raise SystemExit(main())
