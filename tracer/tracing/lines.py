"""Which lines of a plugin's file ran: a thread-local ``sys.settrace`` hook.

Only frames whose code lives in the plugin's file are traced line by line;
every other frame is left alone after one cheap check, so torch's own Python
code runs at full speed.
"""

from __future__ import annotations

import ast
import functools
import linecache
import sys
from types import FrameType
from typing import Any


class LineRecorder:
    """Collects the line numbers executed in one file while active (a context manager)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: set[int] = set()
        self._previous: Any = None

    def _on_call(self, frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename == self.filename:
            return self._on_line
        return None

    def _on_line(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self._on_line

    def take(self) -> set[int]:
        lines, self.lines = self.lines, set()
        return lines

    def __enter__(self) -> LineRecorder:
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)


@functools.lru_cache(maxsize=64)
def _statement_spans(filename: str) -> tuple[tuple[int, int], ...]:
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
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
