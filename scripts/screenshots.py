"""Pictures of the app for the README and the documentation site, drawn by the app itself.

Each picture is the app run headless (Textual's ``run_test``) at 120×40 on the shipped
lessons and variants, driven by key presses as a reader would, then saved with
``export_screenshot`` as an SVG under ``docs/images/``. Regenerate them all after a change to
what the app draws::

    .venv/bin/python scripts/screenshots.py

``tests/core/test_docs_images.py`` draws them again and compares, so a committed picture
never drifts from what the app shows. The progress of these runs goes to a temporary folder,
never to your own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
SIZE = (120, 40)


@dataclass(frozen=True)
class Picture:
    """One screenshot: the file it goes to, the app it draws and the keys pressed first."""

    name: str
    title: str
    app: Callable[[], Any]
    keys: tuple[str, ...]


def _picker() -> Any:
    from tracer.tui.launch import make_picker_app

    return make_picker_app()


def _lesson() -> Any:
    from tracer.tui.launch import make_lesson_app

    return make_lesson_app("01_dot_products", resume=False)


def _explorer() -> Any:
    from tracer.tracing.runner import TraceOptions
    from tracer.tui.launch import make_explore_app

    return make_explore_app("masked", TraceOptions())


PICTURES = (
    Picture("picker", "attn", _picker, ()),
    # Lesson 01: step 7 is the loop of dot products, three pairs into it; the quiz before it,
    # "which token is best aligned with journey?", answered (↓ Enter: journey), else the walk
    # keeps journey's row of scores off the screen until it is.
    Picture(
        "lesson-loop",
        "attn lesson 01_dot_products",
        _lesson,
        ("right",) * 5 + ("down", "enter") + ("right",) * 4,
    ),
    # Lesson 01: step 4 is the first quiz (its table on screen, the answer not).
    Picture("lesson-quiz", "attn lesson 01_dot_products", _lesson, ("right",) * 3),
    # The explorer at the masked variant's sixth stage of twelve (once at the end, so the count
    # of stages is known).
    Picture("explorer", "attn explore masked", _explorer, ("end", "home") + ("right",) * 5),
)


async def _settle(pilot: Any, limit: int = 4000) -> None:
    """Wait until the screen has loaded and no worker runs (conditions, not a clock)."""
    app = pilot.app
    for _ in range(limit):
        await pilot.pause()
        loaded = getattr(app.screen, "session", True) is not None
        if loaded and not any(worker.is_running for worker in app.workers):
            await pilot.pause()
            await pilot.pause()
            return
        await asyncio.sleep(0.005)
    raise TimeoutError(f"{app!r} did not settle")


# Textual names an SVG's CSS classes after a hash of the title and the time; the picture is
# the same whenever it was drawn, so the ids are made from its name instead.
_TERMINAL_ID = re.compile(r"terminal-\d+")


async def draw(picture: Picture) -> str:
    """The SVG of one picture."""
    app = picture.app()
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        for key in picture.keys:
            await pilot.press(key)
            await _settle(pilot)
        svg: str = app.export_screenshot(title=picture.title)
        await pilot.press("q")
    return _TERMINAL_ID.sub(f"terminal-{picture.name}", svg)


# Settings of the person running this that would change the pictures: their theme, keys,
# lessons and plugins, and NO_COLOR.
_UNSET = (
    "ATTN_THEME",
    "ATTN_KEYMAP",
    "ATTN_LESSONS_DIR",
    "ATTN_PLUGINS_DIR",
    "ATTN_STRICT_PLUGINS",
    "NO_COLOR",
)


def draw_all(names: tuple[str, ...] = ()) -> dict[str, str]:
    """Every picture (or those named), by file name, drawn with a private data folder."""
    chosen = [p for p in PICTURES if not names or p.name in names]
    saved = {key: os.environ.get(key) for key in ("ATTN_DATA_DIR", *_UNSET)}
    with tempfile.TemporaryDirectory(prefix="attn-screenshots-") as data:
        os.environ["ATTN_DATA_DIR"] = data
        for key in _UNSET:
            os.environ.pop(key, None)
        try:
            return {f"{p.name}.svg": asyncio.run(draw(p)) for p in chosen}
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", help="only these pictures (default: all)")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {p.name for p in PICTURES}
    if unknown:
        known = ", ".join(p.name for p in PICTURES)
        print(f"screenshots: no picture named {', '.join(sorted(unknown))} (known: {known})")
        return 2
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, svg in draw_all(tuple(args.names)).items():
        (IMAGES / name).write_text(svg, encoding="utf-8")
        print(f"wrote {(IMAGES / name).relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
