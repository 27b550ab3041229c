"""The import graph of tracer/ and plugins/ has no cycles, function-local imports included.

Every module is parsed with ``ast`` (nothing is imported) and every ``import`` statement
counts wherever it stands: at the top, under ``if TYPE_CHECKING:`` or inside a function.
A statement's target is the module it names: ``from tracer.tracing import Trace`` imports the
package ``tracer.tracing`` (its ``__init__``), ``from tracer import hookspecs`` and
``from . import labels`` import those modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracer.layers import LAYERS, PLUGIN_API, SHIMS, UPWARD, layer_of

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tracer", "plugins")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Edge:
    target: str
    line: int
    local: bool
    """Inside a function: runs when the function does, not when the module loads."""


def modules() -> dict[str, Module]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _known(name: str, known: dict[str, Module]) -> str | None:
    """``name`` or its nearest enclosing module of ours (``tracer.x.Class`` -> ``tracer.x``)."""
    # plugins/ is installed as tracer.builtin_plugins (pyproject's package-dir).
    if name == "tracer.builtin_plugins" or name.startswith("tracer.builtin_plugins."):
        name = "plugins" + name.removeprefix("tracer.builtin_plugins")
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(
    node: ast.Import | ast.ImportFrom, module: Module, known: dict[str, Module]
) -> Iterator[str | None]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield _known(alias.name, known)
        return
    if node.level:  # relative: ``from . import x``, ``from ..render import text``
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        if node.module:
            base = f"{base}.{node.module}"
    else:
        base = node.module or ""
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in known else _known(base, known)


def _function_local(tree: ast.Module) -> set[int]:
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for child in ast.walk(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    inside.add(id(child))
    return inside


def import_graph() -> tuple[dict[str, list[Edge]], dict[str, Module]]:
    known = modules()
    graph: dict[str, list[Edge]] = {}
    for module in known.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
        local = _function_local(tree)
        edges = graph.setdefault(module.name, [])
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, known):
                    edge = Edge(target or "", node.lineno, id(node) in local)
                    if target not in (None, module.name) and edge not in edges:
                        edges.append(edge)
    return graph, known


def cycles(graph: dict[str, list[Edge]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for edge in graph.get(name, []):
            if edge.target not in index:
                visit(edge.target)
                low[name] = min(low[name], low[edge.target])
            elif edge.target in on_stack:
                low[name] = min(low[name], index[edge.target])
        if low[name] == index[name]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == name:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def describe(
    component: frozenset[str], graph: dict[str, list[Edge]], known: dict[str, Module]
) -> Iterator[str]:
    """Each import inside the cycle, as ``path:line: a -> b`` (``(in a function)`` if local)."""
    for name in sorted(component):
        for edge in graph[name]:
            if edge.target in component:
                where = known[name].path.relative_to(ROOT)
                local = " (in a function)" if edge.local else ""
                yield f"  {where}:{edge.line}: {name} -> {edge.target}{local}"


def report(
    found: list[frozenset[str]], graph: dict[str, list[Edge]], known: dict[str, Module]
) -> str:
    lines = []
    for component in found:
        lines.append(f"cycle of {len(component)}: {', '.join(sorted(component))}")
        lines.extend(describe(component, graph, known))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, list[Edge]], dict[str, Module]]:
    return import_graph()


def test_no_import_cycles_at_all(graph: tuple[dict[str, list[Edge]], dict[str, Module]]) -> None:
    edges, known = graph
    found = cycles(edges)
    print(report(found, edges, known))
    assert not found, report(found, edges, known)


def _where(name: str, edge: Edge, known: dict[str, Module]) -> str:
    local = " (in a function)" if edge.local else ""
    return f"  {known[name].path.relative_to(ROOT)}:{edge.line}: {name} -> {edge.target}{local}"


def test_every_module_has_a_layer(graph: tuple[dict[str, list[Edge]], dict[str, Module]]) -> None:
    """A new folder or top-level module is placed in the one table (tracer/layers.py)."""
    _, known = graph
    homeless = [
        name
        for name in known
        if name.startswith("tracer") and name not in SHIMS and layer_of(name) is None
    ]
    assert not homeless, f"not in tracer/layers.py: {homeless}"


def test_arrows_point_one_way(graph: tuple[dict[str, list[Edge]], dict[str, Module]]) -> None:
    """cli -> front ends -> session -> lessons and learner -> tracing -> plugin API -> base,
    every layer, function-local imports included: never up."""
    edges, known = graph
    upward = []
    for name, found in sorted(edges.items()):
        mine = layer_of(name)
        if mine is None or name in SHIMS:
            continue
        for edge in found:
            theirs = layer_of(edge.target)
            if theirs is not None and theirs < mine and (name, edge.target) not in UPWARD:
                upward.append(
                    _where(name, edge, known) + f"  ({LAYERS[mine].name} -> {LAYERS[theirs].name})"
                )
    assert not upward, "imports pointing up:\n" + "\n".join(upward)


def test_the_declared_upward_imports_are_lazy(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    """Each exception in UPWARD exists, and is an import the module does not run on load."""
    edges, _ = graph
    for (name, target), why in UPWARD.items():
        found = [edge for edge in edges[name] if edge.target == target]
        assert found and why, (name, target)
        source = (ROOT / (name.replace(".", "/") + "/__init__.py")).read_text(encoding="utf-8")
        tree = ast.parse(source)
        loaded = {id(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}
        assert not any(
            isinstance(node, ast.ImportFrom) and node.module == target and id(node) in loaded
            for node in ast.walk(tree)
        ), f"{name} imports {target} when it loads"


def test_shims_only_point_at_their_new_home(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    edges, known = graph
    for old, new in SHIMS.items():
        assert old in known and new in known, (old, new)
        targets = {edge.target for edge in edges[old]}
        assert targets <= {new, new.rpartition(".")[0]}, (old, targets)
        assert "kept" in known[old].path.read_text(encoding="utf-8").lower(), old


def test_plugins_import_only_the_plugin_api(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    """Built-in plugins are written as anyone's: they import the documented API and their own
    package (plugins/ is installed as ``tracer.builtin_plugins``), nothing else of ours."""
    edges, known = graph
    outside = [
        _where(name, edge, known)
        for name, found in sorted(edges.items())
        if name.startswith("plugins")
        for edge in found
        if edge.target.startswith("tracer") and edge.target not in PLUGIN_API
    ]
    assert not outside, "plugins importing more than the API:\n" + "\n".join(outside)
    api = (ROOT / "docs/api.md").read_text(encoding="utf-8")
    undocumented = [m for m in PLUGIN_API if f"::: {m}" not in api]
    assert not undocumented, f"in the plugin API but not in docs/api.md: {undocumented}"


ENGINE = ("tracer.tracing", "tracer.session.walk", "tracer.lessons.lesson_runner")
"""What the front ends never reach: they draw the session's views and make its moves."""


def test_front_ends_never_touch_the_engine(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    """No module under tracer/tui/ or tracer/text/ imports the tracing package (any module of
    it: runner, stepper, trace, worker), the session's walk or the lesson runner, counting
    function-local and TYPE_CHECKING imports, nor an old path kept for one of them."""
    edges, known = graph
    engine = [*ENGINE, *(old for old, new in SHIMS.items() if new.startswith(ENGINE))]
    found = [
        _where(name, edge, known)
        for name, out in sorted(edges.items())
        if name.startswith(("tracer.tui.", "tracer.text.")) or name in ("tracer.tui", "tracer.text")
        for edge in out
        if any(edge.target == e or edge.target.startswith(f"{e}.") for e in engine)
    ]
    assert not found, "front ends reaching past the session:\n" + "\n".join(found)
    # The rule bites: the session itself does reach them (its loops walk a stepper).
    assert any(e.target.startswith(ENGINE) for e in edges["tracer.session.lesson"])


def test_the_table_places_each_example() -> None:
    assert LAYERS[layer_of("tracer.cli.main") or 0].name == "cli"
    assert LAYERS[layer_of("tracer.tracing.runner") or 0].name.startswith("tracing")
    assert LAYERS[layer_of("tracer") or 0].name == "plugin API"
    assert LAYERS[layer_of("tracer.errors") or 0].name == "base"
    assert layer_of("tracer_other") is None and layer_of("tracerx.y") is None


def test_the_graph_sees_every_form_of_import(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    """The parser itself: each form resolves to the module it loads."""
    edges, _ = graph
    targets = {name: {(e.target, e.local) for e in found} for name, found in edges.items()}
    # ``from tracer import hookspecs``: the module, not the package.
    assert ("tracer.hookspecs", False) in targets["tracer.plugin_host.host"]
    # ``from tracer.tracing.trace import Trace`` at the top of a module.
    assert ("tracer.tracing.trace", False) in targets["tracer.tracing.worker"]
    # A function-local import that keeps torch off start-up is still an edge.
    assert ("tracer.tracing.checks", True) in targets["tracer.tracing.trace"]
    # A built-in plugin importing another through its installed name.
    assert ("plugins._model_loading", False) in targets["plugins._model_check"]
    # A package's __init__ importing its own module.
    assert ("tracer.tracing.trace", False) in targets["tracer.tracing"]


def test_relative_imports_resolve(tmp_path: Path) -> None:
    known = {
        name: Module(name, tmp_path / "x.py", is_package)
        for name, is_package in [
            ("pkg", True),
            ("pkg.a", False),
            ("pkg.sub", True),
            ("pkg.sub.b", False),
        ]
    }
    tree = ast.parse("from . import b\nfrom .. import a\nfrom ..a import thing\nfrom . import x\n")
    module = known["pkg.sub.b"]
    found = [t for node in tree.body for t in _targets(node, module, known)]  # type: ignore[arg-type]
    assert found == ["pkg.sub.b", "pkg.a", "pkg.a", "pkg.sub"]


def test_a_cycle_is_found_and_named() -> None:
    graph = {
        "a": [Edge("b", 1, False)],
        "b": [Edge("c", 2, True)],
        "c": [Edge("a", 3, False)],
        "d": [Edge("a", 4, False)],
    }
    assert cycles(graph) == [frozenset({"a", "b", "c"})]


def test_the_architecture_page_is_made_from_the_table() -> None:
    """docs/architecture.md's diagram and table are what scripts/architecture_doc.py writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "architecture_doc", ROOT / "scripts/architecture_doc.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    page = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    assert script.rewritten(page) == page, "run: python scripts/architecture_doc.py"
    for layer in LAYERS:
        assert f"| {layer.name} |" in page


LONGEST_MODULE = 1000


def test_no_module_is_over_a_thousand_lines(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    """A module that long does several jobs: split it by job (issue 45)."""
    _, known = graph
    long = {
        name: count
        for name, module in known.items()
        if (count := len(module.path.read_text(encoding="utf-8").splitlines())) > LONGEST_MODULE
    }
    assert not long, long


def test_no_two_modules_share_a_name(
    graph: tuple[dict[str, list[Edge]], dict[str, Module]],
) -> None:
    """``check.py`` in two folders reads as one thing in a traceback or an editor's tab; a shim
    kept at an old path is the one exception (it *is* the module it names)."""
    _, known = graph
    seen: dict[str, list[str]] = {}
    for name, module in known.items():
        if module.is_package or not name.startswith("tracer.") or name in SHIMS:
            continue
        seen.setdefault(name.rpartition(".")[2], []).append(name)
    twice = {short: names for short, names in seen.items() if len(names) > 1}
    assert not twice, twice
