"""Hidden widgets not drawn: each step kind's key, from its action to its frame, both ways.

In one process, with Textual's headless driver (no terminal: the frame is composed and
handed to the driver, and that moment ends the timing), the lesson of every step kind
(``tui_latency.EVERY_KIND``) is stepped through and back; rounds alternate between the
screen's compositor as it is (widgets that those in front of them hide are not drawn)
and Textual's own ``_render_chops`` (every widget drawn). Each press's time is the
median over the rounds of its way. Run from the repository root:

    .venv/bin/python benchmarks/frame_cull.py            # 16 rounds
    .venv/bin/python benchmarks/frame_cull.py --rounds 8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from tui_latency import COLUMNS, EVERY_KIND, KIND_PRESSES, ROWS

RIGHT = b"\x1b[C"


async def measure(lesson: Path, rounds: int) -> dict[bool, dict[int, list[float]]]:
    from tracer.tui.launch import make_lesson_app

    app = make_lesson_app(lesson, resume=False)  # first: it sets Textual's frame cap, as attn does
    from textual._compositor import Compositor

    from tracer.tui.lesson_screen import LessonScreen
    from tracer.tui.steady import SteadyCompositor

    frames: list[float] = []
    render_update = Compositor.render_update

    def timed(self: Compositor, *args: Any, **kwargs: Any) -> Any:
        update = render_update(self, *args, **kwargs)
        frames.append(time.perf_counter())
        return update

    culled = SteadyCompositor.__dict__["_render_chops"]
    times: dict[bool, dict[int, list[float]]] = {True: {}, False: {}}
    Compositor.render_update = timed  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(COLUMNS, ROWS)) as pilot:
            await until_quiet(pilot)
            screen = app.screen
            assert isinstance(screen, LessonScreen), screen
            for number in range(rounds):
                cull = number % 2 == 0
                SteadyCompositor._render_chops = culled if cull else Compositor._render_chops  # type: ignore[method-assign]
                for press, (key, _kind) in enumerate(KIND_PRESSES):
                    seen = len(frames)
                    started = time.perf_counter()
                    if key == RIGHT:
                        screen.action_next()
                    else:
                        screen.action_previous()
                    for _ in range(5000):  # until the frame, yielding to Textual's tasks
                        await asyncio.sleep(0)
                        if len(frames) > seen:
                            times[cull].setdefault(press, []).append(frames[seen] - started)
                            break
                    await until_quiet(pilot)
    finally:
        Compositor.render_update = render_update  # type: ignore[method-assign]
        SteadyCompositor._render_chops = culled  # type: ignore[method-assign]
    return times


async def until_quiet(pilot: Any) -> None:
    """Until the app has loaded and no worker runs (what follows a frame: timers, workers)."""
    app = pilot.app
    for _ in range(2000):
        await pilot.pause(0.02)
        if getattr(app.screen, "session", True) is not None and not any(
            worker.is_running for worker in app.workers
        ):
            await pilot.pause(0.06)  # the code drawn ahead, 50 ms after a frame
            return
    raise TimeoutError("the lesson never settled")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=16, help="rounds, alternating (default 16)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        lesson = Path(folder) / "every_kind.yaml"
        lesson.write_text(EVERY_KIND.lstrip(), encoding="utf-8")
        times = asyncio.run(measure(lesson, max(args.rounds, 2)))
    by_kind: dict[str, dict[bool, list[float]]] = {}
    for press, (_key, kind) in enumerate(KIND_PRESSES):
        for cull in (False, True):
            if press in times[cull]:
                by_kind.setdefault(kind, {False: [], True: []})[cull].append(
                    statistics.median(times[cull][press])
                )
    print(f"headless {COLUMNS}×{ROWS}, {max(args.rounds, 2)} rounds alternating, medians")
    print()
    print("| key press lands on | presses | every widget drawn | hidden ones not | ratio |")
    print("|---|---|---|---|---|")
    totals = {False: 0.0, True: 0.0}
    for kind, ways in by_kind.items():
        textual, culled = (sum(ways[way]) / len(ways[way]) for way in (False, True))
        totals[False] += sum(ways[False])
        totals[True] += sum(ways[True])
        print(
            f"| {kind} | {len(ways[True])} | {textual * 1000:.1f} ms | {culled * 1000:.1f} ms | "
            f"{culled / textual:.2f}× |"
        )
    print(
        f"| every press, through and back | {len(KIND_PRESSES)} | {totals[False] * 1000:.0f} ms | "
        f"{totals[True] * 1000:.0f} ms | {totals[True] / totals[False]:.2f}× |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
