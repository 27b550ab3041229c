"""Which lines of a plugin's files ran: a thread-local ``sys.settrace`` hook.

A plugin is more than one file when it imports helpers from its own package
or folder, so the recorder follows every file under the plugin's roots (a
package folder, a plugin folder, or a single module). Frames of any other
file are left alone after one cached look-up, so torch's own Python code
runs at full speed.

A variant that runs a library's code (the ``model`` variant runs Hugging Face
transformers' modeling files) names those files in ``Variant(records=...)``:
paths or module names, resolved when the run starts (:func:`resolve_records`),
and recorded like the plugin's own. A step during which such a library's lines
ran keeps those alone: the plugin's own lines there are its plumbing (pausing
the library's code), not what computed the step. Lines are recorded in the
thread that runs the variant's steps; code the variant runs in a thread of its
own is not.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import linecache
import os
import sys
from collections.abc import Iterable
from types import FrameType
from typing import Any

from tracer.parsing import parse_python


class LineRecorder:
    """Collects the lines executed per file under ``roots`` while active (a context manager)."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots = tuple(os.path.normcase(os.path.abspath(root)) for root in roots)
        self.lines: dict[str, set[int]] = {}
        self.library_roots: tuple[str, ...] = ()
        """Roots added by :meth:`add_roots` with ``library=True`` (``Variant(records=...)``)."""
        self._mine: dict[str, bool] = {}
        self._previous: Any = None
        self.watch: object | None = None
        """A code object (the variant's ``run``) whose returns are noted in ``returned``."""
        self.returned: int | None = None
        """The line ``watch`` last returned (or yielded) from: its ``return`` once it ended."""

    def covers(self, filename: str) -> bool:
        """Whether ``filename`` belongs to the plugin (cached: called on every Python call)."""
        mine = self._mine.get(filename)
        if mine is None:
            path = os.path.normcase(os.path.abspath(filename))
            # Code with no file (``<string>``, ``<frozen abc>``) is no plugin's, even when
            # the plugin's folder is the working folder that abspath puts in front of it.
            mine = not filename.startswith("<") and any(
                path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots
            )
            self._mine[filename] = mine
        return mine

    def _on_call(self, frame: FrameType, event: str, arg: object) -> Any:
        if self.covers(frame.f_code.co_filename):
            return self._on_line
        return None

    def _on_line(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            filename = frame.f_code.co_filename
            lines = self.lines.get(filename)
            if lines is None:
                lines = self.lines[filename] = set()
            lines.add(frame.f_lineno)
        elif event == "return" and frame.f_code is self.watch:
            self.returned = frame.f_lineno
        return self._on_line

    def add_roots(self, roots: Iterable[str], *, library: bool = False) -> None:
        """Record the files under ``roots`` too, from now on (``library``: a library's files
        that the variant runs, whose lines then stand alone for a step, see :meth:`take`)."""
        added = tuple(os.path.normcase(os.path.abspath(root)) for root in roots)
        if added:
            self.roots += added
            if library:
                self.library_roots += added
            self._mine.clear()

    def _in_library(self, filename: str) -> bool:
        path = os.path.normcase(os.path.abspath(filename))
        return any(
            path == root or path.startswith(root.rstrip(os.sep) + os.sep)
            for root in self.library_roots
        )

    def take(self) -> dict[str, set[int]]:
        lines, self.lines = self.lines, {}
        if self.library_roots:
            library = {name: ran for name, ran in lines.items() if self._in_library(name)}
            if library:
                return library
        return lines

    def __enter__(self) -> LineRecorder:
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)


def resolve_records(records: Iterable[str]) -> tuple[str, ...]:
    """The files and folders that ``Variant(records=...)`` names: a path as it is, a module
    name as its file (a package as its folder). A name that cannot be found is left out:
    its lines are then not recorded, and the run goes on."""
    found: list[str] = []
    for record in records:
        if not isinstance(record, str) or not record:
            continue
        if os.path.exists(record):
            found.append(record)
            continue
        try:
            spec = importlib.util.find_spec(record)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found.extend(spec.submodule_search_locations)
        elif spec.origin:
            found.append(spec.origin)
    return tuple(found)


@functools.lru_cache(maxsize=64)
def _statement_spans(filename: str) -> tuple[tuple[int, int], ...]:
    source = "".join(linecache.getlines(filename))
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return ()
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(spans)


_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
)


def statement_lines(filename: str, line: int) -> range:
    """All lines of the simple statement that contains ``line`` (a multi-line ``yield``)."""
    best = (line, line)
    for start, end in _statement_spans(filename):
        if start <= line <= end and (end - start) >= (best[1] - best[0]):
            best = (start, end)
    return range(best[0], best[1] + 1)
