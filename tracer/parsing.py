"""Parsing Python source from any thread: one parse at a time.

CPython 3.11's parser keeps its recursion-depth bookkeeping per interpreter, not per thread,
so two ``ast.parse`` calls in two threads at once can fail with "SystemError: AST constructor
recursion depth mismatch". The app parses a plugin's file for the source pane in one thread
while a lesson's loading worker parses it to mark lines in another: both go through here.
"""

from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """``ast.parse(source)``, never at the same time as another call of this function."""
    with _ONE_AT_A_TIME:
        return ast.parse(source)
