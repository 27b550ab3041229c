"""Shared fixtures: one plugin host per session (loading plugins is the slow part)."""

from __future__ import annotations

import atexit
import gc
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tracer.cli.main import main
from tracer.plugin_host import PluginHost

FIXTURES = Path(__file__).parent / "fixtures"

# Progress and settings never go to the developer's own data folder, even from an app that
# saves after a test's own ATTN_DATA_DIR was undone (a fixture's app closing at teardown).
os.environ["ATTN_DATA_DIR"] = _TEST_DATA = tempfile.mkdtemp(prefix="attn-test-data-")
# Removed when this process ends (each xdist worker makes its own), so runs leave no folders.
atexit.register(shutil.rmtree, _TEST_DATA, ignore_errors=True)

# Hypothesis draws the same examples every run, so whether a change lands never depends on
# luck (CI sets no variable we could key on). To look for new failing inputs, run
# `pytest --hypothesis-profile=explore`; add what it finds as an @example.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("repeatable")


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
def data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own data folder (progress, settings), not yet made: what one test's app
    saved (a lesson's place, answers) is never what a later test's ``attn lessons`` reads.
    Outside ``tmp_path``, which a test may list as its own."""
    folder = tmp_path_factory.mktemp("attn-data") / "data"
    monkeypatch.setenv("ATTN_DATA_DIR", str(folder))
    return folder


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


_TRIALS: dict[tuple[str, int, int], str | None] = {}
"""What the trial import of a test plugin file said, by (path, size, mtime), in this worker."""


@pytest.fixture
def trial_imports_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test plugin file is tried in a forked child once a worker, not at every app start.

    attn first imports a plugin file in a forked child with a deadline (a plugin that hangs
    at import is reported, never imported); each app start here builds a plugin host, and
    forking the test process three times for the three test plugins was most of the forks
    of the suite. A file changed since (same path, other size or time) is tried again; the
    trial itself is tested in tests/core (test_plugin_import_limit.py, test_plugins.py).
    The TUI and session tests ask for it (their conftest.py), where the app is the subject."""
    from tracer.plugin_host import host

    trial = host._trial_import

    def once(load: Any, timeout: float, source: str | None = None, folder: Any = None) -> Any:
        if source is None:
            return trial(load, timeout, source, folder)
        stat = Path(source).stat()
        key = (source, stat.st_size, stat.st_mtime_ns)
        if key not in _TRIALS:
            _TRIALS[key] = trial(load, timeout, source, folder)
        return _TRIALS[key]

    monkeypatch.setattr(host, "_trial_import", once)


@pytest.fixture
def host_loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """Each time ``attn`` builds its plugin host (``load_host``), its arguments, in order.

    The commands that bind ``load_host`` at import are imported first and patched too: one
    first imported while only ``trace_arguments`` was patched would keep the counting
    function after the test (a later ``attn trace`` in the same worker counted into a dead
    list). The count still builds the real host."""
    import tracer.cli.check_cmd
    import tracer.cli.trace_arguments
    import tracer.cli.trace_cmd

    real = tracer.cli.trace_arguments.load_host
    loads: list[tuple[object, ...]] = []

    def counting(*args: Any, **kwargs: Any) -> PluginHost:
        loads.append(args)
        return real(*args, **kwargs)

    for module in (tracer.cli.trace_arguments, tracer.cli.trace_cmd, tracer.cli.check_cmd):
        monkeypatch.setattr(module, "load_host", counting)
    return loads


@pytest.fixture
def attn_json(attn: Callable[..., tuple[int, str, str]]) -> Callable[..., Any]:
    def run(*argv: str) -> Any:
        status, out, err = attn(*argv, "--json")
        assert status == 0, err
        return json.loads(out)

    return run
