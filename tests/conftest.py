"""Shared fixtures: one plugin host per session (loading plugins is the slow part)."""

from __future__ import annotations

import gc
import json
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tracer.cli.main import main
from tracer.plugin_host import PluginHost

FIXTURES = Path(__file__).parent / "fixtures"

# In CI (CI=true) hypothesis draws the same examples every run, so a landing never
# depends on luck; run locally, it explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


DISTRIBUTION = "attention-tracer"
ENTRY_POINT_GROUP = "attention_tracer"
_INSTALLED = {
    str(Path(path).resolve())
    for path in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}
    if "-packages" in path
}


def _installed_elsewhere(entry_point: metadata.EntryPoint) -> bool:
    """A plugin distribution installed in this environment that is not this project."""
    dist = entry_point.dist
    if dist is None:
        return False
    if (dist.name or "").lower().replace("_", "-") == DISTRIBUTION:
        return False
    where = getattr(dist, "_path", None)
    return where is not None and str(Path(str(where)).resolve().parent) in _INSTALLED


@pytest.fixture(scope="session", autouse=True)
def _only_builtin_entry_points() -> Iterator[None]:
    """Tests see the built-in variants and the plugins they make, never ones installed beside us.

    A contributor who installs a plugin (say one scaffolded by ``attn new-plugin``) in the
    project's venv must not see variant lists and messages change under the suite, as the
    developer's own plugin folders are kept out by ``_clean_env``. Subprocesses are not
    filtered: the tests that start one compare built-ins only.
    """
    everything = metadata.entry_points

    def filtered(**params: Any) -> Any:
        found = everything(**params)
        if params.get("group") != ENTRY_POINT_GROUP:
            return found
        return metadata.EntryPoints(ep for ep in found if not _installed_elsewhere(ep))

    patch = pytest.MonkeyPatch()
    patch.setattr(metadata, "entry_points", filtered)
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _young_collections(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """An app collects the whole heap before freezing it; in its own process that is its own
    objects (0.1–0.2 s), but a test worker's heap holds every earlier test's, and a full
    collection of it took 0.6 s per app: 108 s of CPU over the TUI tests. Here a load collects
    the young generations only (what it just made); the frozen heap is thawed after the test
    (below), and the interpreter's own full collections reclaim what earlier apps left.
    A test marked ``full_collection`` runs the app's own, full collection."""
    if request.node.get_closest_marker("full_collection"):
        return

    def young() -> None:
        gc.collect(1)

    for module in ("tracer.tui.lesson_screen", "tracer.tui.explore_screen"):
        monkeypatch.setattr(f"{module}.collect_before_freezing", young)


@pytest.fixture(autouse=True)
def _thawed_heap() -> Iterator[None]:
    """The app freezes the heap once it has loaded (it owns its process); a test's app does
    not own the suite's, so what it froze is thawed for the collector after the test."""
    yield
    if gc.get_freeze_count():
        gc.unfreeze()


@pytest.fixture(scope="session")
def host() -> PluginHost:
    return PluginHost(use_env=False)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see a developer's own plugin folders or strict mode."""
    for name in ("ATTN_PLUGINS_DIR", "ATTN_STRICT_PLUGINS", "ATTN_LESSONS_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def attn(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``attn ARGS...`` in-process: (exit status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            status = main(list(argv))
        except SystemExit as exit:  # argparse's own usage errors
            status = int(exit.code or 0)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture
def attn_json(attn: Callable[..., tuple[int, str, str]]) -> Callable[..., Any]:
    def run(*argv: str) -> Any:
        status, out, err = attn(*argv, "--json")
        assert status == 0, err
        return json.loads(out)

    return run


# The slowest files, in seconds of one worker's time (from `pytest --durations=0`). pytest-xdist
# hands each file whole to the next free worker, in collection order; a slow file handed out
# last leaves the other worker idle at the end, so the slowest go first (longest job first).
# A file missing here only runs later; the list needs no upkeep to stay correct.
SLOW_FILES = {
    "tests/tui/test_snapshots.py": 62,
    "tests/lessons/test_notebooks.py": 34,
    "tests/tui/test_explore.py": 30,
    "tests/tui/test_lesson.py": 30,
    "tests/tui/test_screen_truth.py": 28,
    "tests/tui/test_front_ends_agree.py": 26,
    "tests/tui/test_steady.py": 23,
    "tests/variants/test_app.py": 20,
    "tests/lessons/test_shipped.py": 19,
    "tests/tui/test_every_tensor.py": 16,
    "tests/learner/test_exercises.py": 16,
    "tests/lessons/test_cli.py": 13,
    "tests/learner/test_corpus.py": 12,
    "tests/lessons/test_walk.py": 11,
    "tests/tui/test_layout.py": 11,
    "tests/core/test_worker.py": 11,
    "tests/tui/test_quiz_screen.py": 10,
    "tests/core/test_hostile_4.py": 10,
    "tests/variants/test_cross_attention.py": 10,
    "tests/tui/test_quiz_tables.py": 9,
    "tests/test_forked.py": 9,
    "tests/tui/test_backdrop.py": 9,
    "tests/learner/test_mutations.py": 8,
    "tests/learner/test_check.py": 8,
    "tests/session/test_textual_free.py": 8,
    "tests/tui/test_entry.py": 8,
    "tests/core/test_plugin_import_limit.py": 7,
    "tests/tui/test_kept.py": 7,
    "tests/variants/test_lessons.py": 7,
    "tests/learner/test_styles.py": 7,
    "tests/web/test_browser.py": 7,
    "tests/core/test_variant_api.py": 7,
    "tests/learner/test_isolation.py": 6,
    "tests/learner/test_check_properties.py": 6,
    "tests/core/test_worker_limits.py": 6,
    "tests/tui/test_plain_terminal.py": 6,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def weight(item: pytest.Item) -> int:
        return -SLOW_FILES.get(item.nodeid.split("::", 1)[0], 0)

    items.sort(key=weight)  # stable: each file's tests keep their order
