"""attn serve in a real browser: Debian's chromium, driven by Playwright, opens a lesson and steps.

Playwright never downloads a browser here: it drives the system's chromium
through ``executable_path``. The terminal in the page is drawn on a canvas,
so what the page shows is read from what it received on its websocket (the
app's terminal output), with the escape sequences taken out. On failure a
screenshot is kept in ``$ATTN_TEST_ARTIFACTS`` (default: pytest's cache,
``.pytest_cache/d/browser-screenshots``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.data.seeds import SIMPLE_SCORES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
START_S = 30.0
"""Longest wait for ``attn serve`` to print its URL."""
SHOW_S = 90.0
"""Longest wait for something to appear on the page (the app loads torch first)."""
ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")

playwright_sync = pytest.importorskip(
    "playwright.sync_api",
    reason="Playwright is not installed (pip install playwright; it is in the 'test' extra)",
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install -y chromium, as .ci/run does); "
    "this test never downloads a browser",
)


def children(pid: int) -> list[int]:
    """The processes ``pid`` started that are still running (Linux's /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(child) for child in text.split()]
    return found


@pytest.fixture
def served_lesson(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """``attn serve 03_vectorising --port 0`` on 127.0.0.1: the URL it printed, and its pid."""
    env = {**os.environ, "ATTN_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "tracer", "serve", "03_vectorising", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        url = None
        deadline = time.monotonic() + START_S
        for _ in range(50):  # it prints one line; a few more at most
            line = server.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:\d+/\S+/", line)
            if found or not line or time.monotonic() > deadline:
                url = found.group(0) if found else None
                break
        assert url is not None, "attn serve printed no URL"
        yield url, server.pid
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


def screen_text(frames: list[bytes]) -> str:
    return ESCAPES.sub("", b"".join(frames).decode("utf-8", "replace"))


def test_a_lesson_steps_in_the_browser_and_shows_the_numbers(
    served_lesson: tuple[str, int], request: pytest.FixtureRequest
) -> None:
    url, server = served_lesson
    frames: list[bytes] = []
    with playwright_sync.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on(
            "websocket",
            lambda socket: socket.on(
                "framereceived",
                lambda payload: frames.append(
                    payload if isinstance(payload, bytes) else payload.encode()
                ),
            ),
        )
        try:
            page.goto(url, timeout=SHOW_S * 1000)
            # The first step is narration: the lesson is open in the page's terminal.
            wait_for_text(page, frames, "Xᵀ")
            page.locator(".xterm-helper-textarea").focus()
            page.keyboard.press("ArrowRight")
            # Step 2: the quiz on the shape of X Xᵀ, asked before the table shows it; with
            # its box empty, → goes on.
            wait_for_text(page, frames, "What shape is X")
            shown_before = len(frames)
            page.keyboard.press("ArrowRight")
            # Step 3: the scores X Xᵀ, computed by the vectorized variant in the app's process.
            # "journey"'s row, from the course; a cell that would give away one of the
            # lesson's quizzes (none answered yet) reads "?" instead.
            hidden = {column for row, column in hidden_on_step_3() if row == 1}
            row = [f"{v:.4f}" for c, v in enumerate(SIMPLE_SCORES[1]) if c not in hidden]
            wait_for_text(page, frames, *row, *(["?"] if hidden else []), since=shown_before)
            assert len(children(server)) == 1, "one app process for the one page"
            page.close()
            for _ in range(int(SHOW_S / 0.25)):  # closing the page ends its app
                if not children(server):
                    break
                time.sleep(0.25)
            assert children(server) == [], "the app outlived its page"
        except BaseException:
            save_screenshot(page, request)
            raise
        finally:
            browser.close()


def hidden_on_step_3() -> frozenset[tuple[int, int]]:
    """The cells of 03_vectorising's step 3 the walk hides while no quiz is answered."""
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import load_lesson, resolve_lesson
    from tracer.lessons.views import step_view
    from tracer.plugin_host import PluginHost

    host = PluginHost(())
    lesson = load_lesson(resolve_lesson("03_vectorising"), host)
    view = step_view(lesson, LessonRunner(lesson, host), 2, answered=frozenset())
    return view.tables[0].hidden


def wait_for_text(page: object, frames: list[bytes], *texts: str, since: int = 0) -> None:
    """Poll the page's received terminal output until every text is in it (bounded)."""
    for _ in range(int(SHOW_S / 0.25)):
        shown = screen_text(frames[since:])
        if all(text in shown for text in texts):
            return
        page.wait_for_timeout(250)  # type: ignore[attr-defined]
    missing = [text for text in texts if text not in screen_text(frames[since:])]
    raise AssertionError(f"the page never showed {missing} within {SHOW_S:.0f} s")


def save_screenshot(page: object, request: pytest.FixtureRequest) -> None:
    folder = os.environ.get("ATTN_TEST_ARTIFACTS")
    target = Path(folder) if folder else request.config.cache.mkdir("browser-screenshots")
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{request.node.name}.png"
    try:
        page.screenshot(path=str(path))  # type: ignore[attr-defined]
    except Exception as error:  # the page may be gone; the test's own failure matters more
        print(f"no screenshot: {error}")
    else:
        print(f"screenshot of the failing page: {path}")
