"""Reading YAML written by people, safely and with exact positions.

Used for inputs files and lessons. PyYAML's composer builds a node tree that
keeps the line and column of everything, and never constructs Python objects;
we then refuse the YAML features a hand-written data file has no use for and
that make files unsafe or confusing: anchors and aliases (billion laughs),
tags (``!!python/object``) and duplicate keys (the second silently wins).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tracer.errors import Location

MAX_BYTES = 1024 * 1024
"""Hand-written lessons and inputs are a few kilobytes; refuse anything huge up front."""

# Tags a person may write explicitly; each maps to a plain data type.
_PLAIN_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")
}


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a document, at a position (1-based)."""

    line: int
    column: int
    message: str
    path: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"

    @property
    def location(self) -> Location:
        return Location(self.path, self.line, self.column)


class DocumentError(Exception):
    """A document that could not be read; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(str(problems[0]) if problems else "invalid document")
        self.problems = problems


def position(node_or_mark: Any) -> tuple[int, int]:
    """1-based (line, column) of a node or a PyYAML mark."""
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return mark.line + 1, mark.column + 1


def problem_at(node: yaml.Node | Any, message: str, path: str) -> Problem:
    line, column = position(node)
    return Problem(line, column, message, path)


def read_text(path: Path, *, what: str = "file", limit: int = MAX_BYTES) -> str:
    """Read a UTF-8 text file, turning every OS and encoding failure into one Problem."""
    where = str(path)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise DocumentError([Problem(1, 1, f"{what} is a directory, not a file", where)])
        if size > limit:
            raise DocumentError(
                [
                    Problem(
                        1,
                        1,
                        f"{what} is too large ({_megabytes(size)}; the limit is "
                        f"{limit // 2**20} MB)",
                        where,
                    )
                ]
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise DocumentError([Problem(1, 1, f"{what} not found", where)]) from None
    except OSError as exc:
        raise DocumentError([Problem(1, 1, f"cannot read {what}: {exc.strerror}", where)]) from None
    return decode(data, where, limit)


def decode(data: bytes, path: str, limit: int = MAX_BYTES) -> str:
    if len(data) > limit:
        message = (
            f"document is too large ({_megabytes(len(data))}; the limit is {limit // 2**20} MB)"
        )
        raise DocumentError([Problem(1, 1, message, path)])
    if b"\x00" in data:
        raise DocumentError([Problem(1, 1, "this is a binary file, not YAML text", path)])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"not UTF-8 text (byte 0x{data[exc.start]:02x})"
        raise DocumentError([Problem(line, column, message, path)]) from None


MAX_FLOW_DEPTH = 100
"""PyYAML's scanner slows down quadratically with [ and { nesting (2,000 levels take
seconds); a lesson needs a handful, so deeper text is refused before parsing."""
_BRACKETS = re.compile(r"[\[\]{}]")
# What YAML forbids in a stream (its printable set, inverted); found up front for a clear position.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def precheck(text: str, path: str) -> list[Problem]:
    problems = []
    bad = _FORBIDDEN.search(text)
    if bad is not None:
        line, column = line_column(text, bad.start())
        code = f"U+{ord(bad.group()):04X}"
        problems.append(
            Problem(line, column, f"control character {code} is not allowed in YAML text", path)
        )
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        if depth > MAX_FLOW_DEPTH:
            line, column = line_column(text, match.start())
            message = f"document nests too deeply (more than {MAX_FLOW_DEPTH} levels of [ and {{)"
            problems.append(Problem(line, column, message, path))
            break
    return problems


def line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def compose(text: str, path: str) -> yaml.Node | None:
    """Parse ``text`` into a node tree, or raise DocumentError listing every problem.

    Returns None for an empty document. Control characters and deep nesting are
    refused before PyYAML sees the text, each at its position.
    """
    problems = precheck(text, path)
    if problems:
        raise DocumentError(problems)
    problems = list(_feature_problems(text, path))
    if problems:
        raise DocumentError(sorted(problems))
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        raise DocumentError([_syntax_problem(exc, path)]) from None
    except yaml.YAMLError as exc:  # ReaderError: control characters
        raise DocumentError([Problem(1, 1, f"not valid YAML: {exc}", path)]) from None
    except RecursionError:
        raise DocumentError([Problem(1, 1, "document nests too deeply", path)]) from None
    if node is not None:
        problems.extend(_duplicate_keys(node, path))
    if problems:
        raise DocumentError(sorted(problems))
    return node


def _feature_problems(text: str, path: str) -> Iterator[Problem]:
    """Refuse anchors, aliases and non-plain tags, reading events only (nothing expands)."""
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            anchor = getattr(event, "anchor", None)
            if isinstance(event, yaml.AliasEvent):
                yield problem_at(
                    event,
                    f"aliases (*{anchor}) are not allowed; repeat the value "
                    "(text that starts with '*' must be in quotes)",
                    path,
                )
            elif anchor is not None:
                yield problem_at(
                    event, f"anchors (&{anchor}) are not allowed; repeat the value", path
                )
            tag = getattr(event, "tag", None)
            if tag is not None and tag != "!" and tag not in _PLAIN_TAGS:
                shown = tag.replace("tag:yaml.org,2002:", "!!")
                if shown.startswith("!!python/"):
                    message = (
                        f"YAML tag {shown} is not allowed: these files never build Python objects"
                    )
                else:
                    message = f"YAML tag {shown} is not allowed; write plain values"
                yield problem_at(event, message, path)
    except yaml.MarkedYAMLError as exc:
        yield _syntax_problem(exc, path)
    except yaml.YAMLError as exc:
        yield Problem(1, 1, f"not valid YAML: {_one_line(str(exc))}", path)
    except RecursionError:
        yield Problem(1, 1, "document nests too deeply", path)


def _syntax_problem(exc: yaml.MarkedYAMLError, path: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, column = position(mark) if mark is not None else (1, 1)
    what = _one_line(exc.problem or "not valid YAML")
    context = exc.context_mark
    started_here = context is not None and (context.line, context.column) == (line - 1, column - 1)
    if exc.context and context is not None and "quoted scalar" in exc.context:
        # Report where the quote opens: that is where the mistake is, not where the file ends.
        opened, line, column = line, *position(context)
        quote = _char_at(context)
        return Problem(
            line,
            column,
            f"malformed YAML: the quote {quote} opened here is never closed "
            f"({what} at line {opened}, column {position(mark)[1] if mark else 1})",
            path,
        )
    if exc.context and context is not None and "alias" in exc.context:
        line, column = position(context)
        return Problem(
            line,
            column,
            f"malformed YAML: {what}; text that starts with '*' must be in quotes "
            "(YAML reads * as an alias)",
            path,
        )
    if "expected <block end>" in (exc.problem or "") and context is not None:
        return Problem(line, column, _block_end(exc, context, column), path)
    if exc.context and context is not None and not started_here:
        # "while parsing a flow sequence" -> where the unclosed thing began
        started = exc.context.replace("while parsing ", "").replace("while scanning ", "")
        what += f" ({started} started at line {context.line + 1}, column {context.column + 1})"
    what += _quote_hint(exc, mark)
    return Problem(line, column, f"malformed YAML: {what}", path)


def _block_end(exc: yaml.MarkedYAMLError, context: Any, column: int) -> str:
    """PyYAML's "expected <block end>" in words: text after a [...] or {...} value on its
    line, or a line that lines up with no entry of the block it is in."""
    block_line, block_column = position(context)
    if "found '<scalar>'" in (exc.problem or ""):
        return (
            "malformed YAML: text goes on after a [...] or {...} value; text that starts "
            "with [ or { must be in quotes"
        )
    if column == block_column:
        return (
            f"malformed YAML: this line is a key where the list that starts at line "
            f"{block_line} holds entries that start with '- '; start it with '- ' too, or "
            "indent it under the entry it belongs to"
        )
    return (
        f"malformed YAML: this line starts at column {column}, which lines up with no "
        f"entry of the block it is in (its entries start at column {block_column}, from "
        f"line {block_line}); indent it like them, or further to nest it in one"
    )


def _char_at(mark: Any) -> str:
    buffer = getattr(mark, "buffer", None)
    if isinstance(buffer, str) and 0 <= mark.pointer < len(buffer):
        return f"({buffer[mark.pointer]})"
    return ""


_STARTERS = "@`"
"""Characters YAML reserves: a plain value may not start with them."""


def _quote_hint(exc: yaml.MarkedYAMLError, mark: Any) -> str:
    """'; ... must be in quotes' when the error comes from text that starts with YAML syntax."""
    problem = exc.problem or ""
    for char in _STARTERS:
        if f"found character '{char}' that cannot start any token" in problem:
            return f"; text that starts with {char} must be in quotes"
    buffer = getattr(mark, "buffer", None)
    if "expected <block end>" in problem and isinstance(buffer, str) and mark is not None:
        start = buffer.rfind("\n", 0, mark.index) + 1
        text = buffer[start : buffer.find("\n", mark.index)]
        if ": [" in text or ": {" in text or "- [" in text or "- {" in text:
            return "; text that starts with [ or { must be in quotes"
    return ""


def _duplicate_keys(root: yaml.Node, path: str) -> Iterator[Problem]:
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Node] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        first_line, first_column = position(seen[key.value])
                        message = (
                            f"duplicate key '{key.value}' "
                            f"(first defined at line {first_line}, column {first_column})"
                        )
                        yield problem_at(key, message, path)
                    else:
                        seen[key.value] = key
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


_constructor = yaml.constructor.SafeConstructor()


def value_of(node: yaml.Node) -> Any:
    """The plain Python value of a node (str, int, float, bool, None, list, dict)."""
    if isinstance(node, yaml.ScalarNode):
        return _constructor.construct_object(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return [value_of(item) for item in node.value]
    return {value_of(key): value_of(value) for key, value in node.value}


def mapping_items(node: yaml.MappingNode) -> Iterator[tuple[str, yaml.Node, yaml.Node]]:
    """(key text, key node, value node) for each entry of a mapping."""
    for key, value in node.value:
        yield str(key.value) if isinstance(key, yaml.ScalarNode) else "?", key, value


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"
