"""The documentation site: its pictures are the app's, its reference and changelog are current.

The site itself is built by CI (``mkdocs build --strict`` in ``.ci/run``), which checks every
link and anchor; these tests check what a build cannot: that the pictures are what the app
draws today, and that the reference names everything the code reads.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from xml.etree import ElementTree

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


def hook() -> ModuleType:
    """docs/hooks/diagrams.py, the mkdocs hook, imported as a module (it needs no mkdocs)."""
    name = "attn_docs_diagrams"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DOCS / "hooks" / "diagrams.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_the_site_draws_its_diagrams_at_build_time() -> None:
    config = mkdocs_config()
    assert config["hooks"] == ["docs/hooks/diagrams.py"]
    # Nothing hands a ```mermaid block to mermaid's script (which comes from a CDN).
    assert "mermaid" not in yaml.safe_dump(config["markdown_extensions"])
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert "```mermaid" in page  # kept in the source: GitHub draws it when it shows the page
    built = hook().replace_diagrams(page)
    assert "```mermaid" not in built and "flowchart" not in built
    (svg,) = re.findall(r"<svg\b.*?</svg>", built, re.S)
    assert "\n" not in svg  # one line: Markdown leaves a raw HTML block alone
    drawn = ElementTree.fromstring(svg)
    namespace = "{http://www.w3.org/2000/svg}"
    assert drawn.tag == f"{namespace}svg"
    # Nothing it shows is fetched: no script, no link, no image.
    assert not [e for e in drawn.iter() if e.tag.split("}")[1] in ("script", "image", "a")]
    assert re.findall(r"https?://[^\"]+", svg) == ["http://www.w3.org/2000/svg"]
    # The boxes, top to bottom, are the layers of the page's own table, in its order.
    bold = [t for t in drawn.iter(f"{namespace}text") if t.get("font-weight") == "bold"]
    assert [float(t.get("y", 0)) for t in bold] == sorted(float(t.get("y", 0)) for t in bold)
    table = page.split("| layer | modules |", 1)[1].split("\n\n", 1)[0]
    layers = re.findall(r"^\| ([^|`]+?) \|", table, re.M)
    assert [(t.text or "").replace(" · ", ", ") for t in bold] == layers
    # Every page's diagrams can be drawn (the build fails on one that cannot).
    for path in DOCS.glob("*.md"):
        assert "```mermaid" not in hook().replace_diagrams(path.read_text(encoding="utf-8"))


def test_a_diagram_the_hook_cannot_draw_fails_the_build_not_the_reader() -> None:
    error = hook().DiagramError
    for source in (
        "graph LR\n  a --> b\n",  # another direction
        'flowchart TD\n  a["A"]\n  b["B"]\n  a --> b\n  b --> a\n',  # two chains
        'flowchart TD\n  a["A"]\n  a --> b\n',  # a box without a label
        'flowchart TD\n  a["A"]\n  b["B"]\n  a -.-> b\n',  # another kind of arrow
    ):
        with pytest.raises(error):
            hook().replace_diagrams(f"```mermaid\n{source}```\n")


def code_spans(text: str) -> list[str]:
    """The inline code of a Markdown page (outside fenced blocks): `...` and <code>...</code>."""
    prose = re.sub(r"^( *)```.*?^\1```", "", text, flags=re.S | re.M)
    return re.findall(r"`([^`\n]+)`|<code>(.*?)</code>", prose)


def test_no_code_on_the_site_shows_a_backslash_before_a_pipe() -> None:
    # Python-Markdown keeps the backslash of `a\|b` (GitHub's tables drop it), so the site
    # showed `attn lesson NAME\|PATH`; the pages write <code>NAME&#124;PATH</code>.
    pages = [*DOCS.glob("*.md"), REPO / "CHANGELOG.md", REPO / "benchmarks" / "README.md"]
    shown = [
        (path.name, span)
        for path in pages
        for span in code_spans(path.read_text(encoding="utf-8"))
        if "\\|" in "".join(span)
    ]
    assert shown == []
    reference = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert "<code>attn lesson NAME&#124;PATH</code>" in reference
    # And the build refuses a page that would show one (the hook reads the rendered HTML).
    assert hook().literal_pipes("<td><code>attn lesson NAME\\|PATH</code></td>") == [
        "attn lesson NAME\\|PATH"
    ]
    assert hook().literal_pipes("<td><code>attn lesson NAME&#124;PATH</code></td>") == []


def joined(block: str) -> str:
    """A command written over several lines (after `&&` or a `\\`), as one line."""
    return re.sub(r"\s*\\\n\s*|(?<=&&)\n\s*", " ", block.strip()).replace("&&  ", "&& ")


def test_the_sites_quick_start_fits_a_narrow_page_and_says_what_the_readme_says() -> None:
    # At 1,280 px the page's column holds about 80 characters of code; these stay well inside.
    page = (DOCS / "index.md").read_text(encoding="utf-8")
    section = page.split("## Quick start", 1)[1].split("\n## Guides", 1)[0]
    blocks = [
        textwrap.dedent(body) for body in re.findall(r"^ *```sh\n(.*?)^ *```", section, re.S | re.M)
    ]
    assert len(blocks) == 4
    assert max(len(line) for block in blocks for line in block.splitlines()) <= 72
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    cpu, opens, tests, activate = (joined(block) for block in blocks)
    assert f"`{cpu}`" in quick
    assert f"```sh\n{opens}\n```" in quick and f"```sh\n{tests}\n```" in quick
    assert activate == "source .venv/bin/activate"
    for block in blocks:  # each is one command a shell reads as written
        assert subprocess.run(["bash", "-n", "-c", block]).returncode == 0


def test_the_plugin_guides_sample_error_is_what_the_tool_prints(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guide = (DOCS / "plugins.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"## The shape of a plugin\n\n```python\n(.*?)```", guide, re.S)
    section = guide.split("## What is checked, and what you see when it fails", 1)[1]
    (mistake,) = re.findall(r"yielded\s+`(scores=[^`]+)`", section)
    (folder,) = re.findall(r"here the folder is `([^`]+)`", section)
    (shown,) = re.findall(r"```console\n(.*?)```", section, re.S)
    command, printed, echo, status = shown.splitlines()
    assert echo == "$ echo $?"
    # The guide's own example with the guide's mistake in it, in a folder of the tmp dir.
    assert example.count("scores=run.focus(scores)") == 1
    plugins = tmp_path / "my_plugins"
    plugins.mkdir()
    (plugins / "banded.py").write_text(
        example.replace("scores=run.focus(scores)", mistake), encoding="utf-8"
    )
    # The line the guide names is the yield of that stage, counted in the example itself.
    (line,) = re.findall(r"banded\.py:(\d+):", printed)
    assert 'yield stage("scores"' in example.splitlines()[int(line) - 1]
    monkeypatch.chdir(tmp_path)
    got = attn(*command.removeprefix("$ attn ").split())
    assert got == (int(status), "", printed.replace(folder, str(plugins)) + "\n")


def test_the_api_reference_covers_every_public_name_a_plugin_imports() -> None:
    import tracer.errors
    import tracer.testing

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(r.startswith("mkdocstrings-python") for r in extras["docs"])
    plugins = mkdocs_config()["plugins"]
    assert isinstance(plugins, list)
    (handlers,) = [p["mkdocstrings"]["handlers"] for p in plugins if isinstance(p, dict)]
    assert "inventories" not in handlers["python"]  # fetched from the network at build time
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    directives = re.findall(r"^::: ([\w.]+)$", page, re.M)
    assert {"tracer", "tracer.testing", "tracer.inputs.InputSet", "tracer.errors"} <= set(
        directives
    )
    # `::: tracer` shows the names in tracer.__all__ that have a docstring, less its filters.
    block = page.split("::: tracer\n", 1)[1].split("\n\n", 1)[0]
    filters = yaml.safe_load(textwrap.dedent(block))["options"]["filters"]
    hidden = [f[1:] for f in filters if f.startswith("!")]
    shown = [n for n in tracer.__all__ if not any(re.search(f, n) for f in hidden)]
    assert sorted(set(tracer.__all__) - set(shown)) == ["__version__", "trace"]
    undocumented = [
        name
        for name in shown
        if name != "hookimpl" and not (getattr(tracer, name).__doc__ or "").strip()
    ]
    assert undocumented == []
    # hookimpl is an object, documented where it is made (an attribute docstring).
    hookspecs = (REPO / "tracer" / "hookspecs.py").read_text(encoding="utf-8")
    assert re.search(r'^hookimpl = .*\n"""Marks', hookspecs, re.M)
    assert all((getattr(tracer.testing, n).__doc__ or "").strip() for n in tracer.testing.__all__)
    members = re.findall(r'"(\w+)"', page.split("::: tracer.errors", 1)[1].split("\n\n", 1)[0])
    for raised in ("UsageError", "PluginError"):  # what the guide tells a plugin to raise
        assert raised in members and (getattr(tracer.errors, raised).__doc__ or "").strip()


def test_sphinx_roles_in_docstrings_reach_the_api_page_as_plain_code() -> None:
    rendered = "raises :class:<code>~tracer.errors.UsageError</code> (see :func:<code>run</code>)"
    assert hook().plain_roles(rendered) == (
        "raises <code>tracer.errors.UsageError</code> (see <code>run</code>)"
    )
    assert hook().plain_roles("a ratio :1:<code>x</code>") == "a ratio :1:<code>x</code>"


MINE = """\
import torch
from tracer import Option, Variant, hookimpl, stage

def topk(run):
    yield stage("scores", "Scores", axes=("query", "key"), scores=run.inputs @ run.inputs.T)
    return run.inputs

@hookimpl
def register_variants(register):
    register(Variant(
        name="topk", title="Top k", run=topk, stages=("scores",), uses_weights=False,
        options=(Option("k", int, 0, min=1),),
    ))
"""


def test_the_plugin_guides_bad_option_warning_is_what_the_tool_prints(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    guide = (DOCS / "plugins.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```text\n(attn: warning: plugin 'mine'[^\n]*)\n```", guide)
    (folder, line) = re.findall(r"\((/\S+)/mine\.py:(\d+)\)$", shown)[0]
    # A plugin 'mine' with the guide's declaration, Option("k", int, 0, min=1), at that line.
    assert (
        MINE.splitlines()[int(line) - 1].strip().startswith('options=(Option("k", int, 0, min=1)')
    )
    assert 'Option("k", int, 0, min=1)' in guide
    plugins = tmp_path / "my_plugins"
    plugins.mkdir()
    (plugins / "mine.py").write_text(MINE, encoding="utf-8")
    status, _, err = attn(
        "trace", "naive-loop", "--plugins-dir", str(plugins), "--stages", "inputs"
    )
    assert status == 0
    assert err == shown.replace(folder, str(plugins)) + "\n"


def test_the_plugin_guides_parameter_errors_are_what_the_tool_prints(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guide = (DOCS / "plugins.md").read_text(encoding="utf-8")
    section = guide.split("## Learnt parameters", 1)[1].split("\n## ", 1)[0]
    (plugin,) = re.findall(r"```python\n(.*?)```", section, re.S)[:1]
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (errors,) = re.findall(r"```text\n(.*?)```", section, re.S)
    plugins = tmp_path / "my_plugins"
    plugins.mkdir()
    (plugins / "t5.py").write_text(plugin, encoding="utf-8")
    # The guide's inputs, with the mistake each line names on their line 4.
    first_lines = textwrap.dedent(example).splitlines()[:3]
    assert first_lines[2] == "params:"
    mistakes = ["  rel_bais: [0.1, -0.2, 0.0]", "  rel_bias: [0.1, -0.2, 0.0]"]
    printed = textwrap.dedent(errors).splitlines()
    assert len(printed) == len(mistakes)
    for number, (mistake, expected) in enumerate(zip(mistakes, printed, strict=True)):
        folder = tmp_path / f"run{number}"
        folder.mkdir()
        (folder / "in.yaml").write_text("\n".join([*first_lines, mistake]) + "\n")
        monkeypatch.chdir(folder)
        status, out, err = attn(
            "trace", "t5-bias", "--plugins-dir", str(plugins), "--inputs", "in.yaml"
        )
        assert (status, out, err) == (2, "", expected + "\n")
