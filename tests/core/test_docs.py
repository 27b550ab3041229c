"""The documentation site: its pictures are the app's, its reference and changelog are current.

The site itself is built by CI (``mkdocs build --strict`` in ``.ci/run``), which checks every
link and anchor; these tests check what a build cannot: that the pictures are what the app
draws today, and that the reference names everything the code reads.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml

import tracer

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def screenshots() -> ModuleType:
    """scripts/screenshots.py, imported as a module (scripts/ is not a package)."""
    name = "attn_docs_screenshots"
    if name not in sys.modules:
        path = REPO / "scripts" / "screenshots.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_the_pictures_are_what_the_app_draws_now() -> None:
    """Each committed SVG is drawn again, in this process, and must be the same."""
    drawn = screenshots().draw_all()
    assert len(drawn) >= 4  # the picker, a lesson step, a quiz, the explorer
    stale = [
        name
        for name, svg in drawn.items()
        if not (DOCS / "images" / name).exists()
        or (DOCS / "images" / name).read_text(encoding="utf-8") != svg
    ]
    assert stale == [], (
        f"the app no longer draws {', '.join(stale)} as committed: run "
        "`.venv/bin/python scripts/screenshots.py`, look at the pictures, and commit them"
    )
    # Every picture the docs show is one the script draws, and every one drawn is shown.
    shown = {
        name
        for page in [*DOCS.glob("*.md"), REPO / "README.md"]
        for name in re.findall(r"images/([\w-]+\.svg)\)", page.read_text(encoding="utf-8"))
    }
    assert shown == set(drawn)


def mkdocs_config() -> dict[str, object]:
    # mkdocs.yml names Python objects with !!python/name tags; a safe loader that ignores them.
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    config: dict[str, object] = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=Loader)
    return config


def test_every_page_is_in_the_sites_navigation() -> None:
    nav = mkdocs_config()["nav"]
    assert isinstance(nav, list)
    pages = {page for entry in nav for page in entry.values()}
    assert pages == {path.name for path in DOCS.glob("*.md")}


def test_the_docs_extra_builds_the_site_and_checks_the_distributions() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in extras["docs"]}
    assert {"mkdocs", "mkdocs-material", "build", "twine"} <= names
    ci = (REPO / ".ci" / "run").read_text()
    for step in (
        "-e '.[docs]'",
        "mkdocs build --strict",
        "python -m build",
        "twine check --strict",
    ):
        assert step in ci, step


def test_the_reference_names_every_environment_variable_the_code_reads() -> None:
    read = {
        name
        for path in (REPO / "tracer").rglob("*.py")
        for name in re.findall(r"\bATTN_[A-Z_]+[A-Z]\b", path.read_text(encoding="utf-8"))
    }
    assert read, "no ATTN_ variable found: the pattern is wrong"
    reference = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert sorted(name for name in read if f"`{name}" not in reference) == []


def test_the_learners_guide_lists_every_built_in_variant() -> None:
    entry_points = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][
        "attention_tracer"
    ]
    guide = (DOCS / "learners.md").read_text(encoding="utf-8")
    table = guide.split("### The built-in variants", 1)[1].split("\n#", 1)[0]
    listed = set(re.findall(r"^\| `([\w-]+)`(?:, `([\w-]+)`)?", table, re.M))
    names = {name for row in listed for name in row if name}
    assert names == set(entry_points)


def test_the_reference_lists_every_command() -> None:
    from tracer.cli.main import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    reference = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert sorted(name for name in commands.choices if f"`attn {name}" not in reference) == []


@pytest.fixture(scope="module")
def changelog() -> str:
    return (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_changelog_has_released_versions_and_the_package_is_the_latest(
    changelog: str,
) -> None:
    headings = re.findall(r"^## \[([^]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, re.M)
    assert headings[0] == ("Unreleased", "")
    released = headings[1:]
    assert [version for version, _ in released][-2:] == ["0.2.0", "0.1.0"]
    assert all(date for _, date in released), "every released version has its date"
    dates = [date for _, date in released]
    assert dates == sorted(dates, reverse=True)
    assert released[0][0] == tracer.__version__
