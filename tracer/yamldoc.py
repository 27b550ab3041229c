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
                    event,
                    f"anchors (&{anchor}) are not allowed; repeat the value, or put text that "
                    "starts with '&' in quotes",
                    path,
                )
            tag = getattr(event, "tag", None)
            if tag is not None and tag != "!" and tag not in _PLAIN_TAGS:
                shown = tag.replace("tag:yaml.org,2002:", "!!")
                if shown.startswith("!!python/"):
                    message = (
                        f"YAML tag {shown} is not allowed: these files never build Python objects"
                    )
                else:
                    message = (
                        f"YAML tag {shown} is not allowed; write plain values, and put text that "
                        "starts with '!' in quotes"
                    )
                yield problem_at(event, message, path)
    except yaml.MarkedYAMLError as exc:
        yield _syntax_problem(exc, path)
    except yaml.YAMLError as exc:
        yield Problem(1, 1, f"not valid YAML: {_one_line(str(exc))}", path)
    except RecursionError:
        yield Problem(1, 1, "document nests too deeply", path)


def _syntax_problem(exc: yaml.MarkedYAMLError, path: str) -> Problem:
    """PyYAML's error in words a teacher reads, at the place the mistake is written: never
    PyYAML's own terms (``<block end>``, "flow mapping", "simple key", "scalar")."""
    mark = exc.problem_mark or exc.context_mark
    line, column = position(mark) if mark is not None else (1, 1)
    text = _Text(getattr(mark, "buffer", None))
    said = _in_words(exc, text, line, column)
    if said is None:  # a message nobody has put in words yet: PyYAML's, on one line
        said = line, column, _one_line(exc.problem or exc.context or "not valid YAML")
    line, column, words = said
    return Problem(line, column, f"malformed YAML: {words}", path)


class _Text:
    """The document's lines, to say what a line holds (the buffer PyYAML's marks carry)."""

    def __init__(self, buffer: object) -> None:
        text = buffer if isinstance(buffer, str) else ""
        self.lines = text.rstrip("\0").split("\n")

    def line(self, number: int) -> str:
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ""

    def before(self, number: int) -> Iterator[tuple[int, str]]:
        """(line number, text) of each line with content before line ``number``, nearest
        first: blank lines and comments left out."""
        for index in range(min(number, len(self.lines) + 1) - 2, -1, -1):
            stripped = self.lines[index].strip()
            if stripped and not stripped.startswith("#"):
                yield index + 1, self.lines[index]


def _indent(text: str) -> int:
    """The 1-based column where a line's content starts."""
    return len(text) - len(text.lstrip(" ")) + 1


def _entry(text: str) -> bool:
    return text.lstrip(" ").startswith("- ") or text.strip() == "-"


_FOUND = re.compile(r"found '(.*)'$|got '(.*)'$")
_KEY_VALUE = re.compile(r"^\s*(?:- +)?([^\s:#'\"\[{][^:#]*?):(\S.*)?$")
_KEY_WITH_TEXT = re.compile(r"^\s*(?:- +)?[^\s:#'\"\[{][^:#]*?: +[^\s#|>].*$")


def _spaced(key: str, value: str) -> str:
    """The fix for ``key:value``: the line as it should be, or the space to add."""
    if len(value.split()) == 1 and len(value) <= 40:
        return f"write '{key}: {value}'"
    return f"put a space after '{key}:'"


def _found(exc: yaml.MarkedYAMLError) -> str:
    """What PyYAML found where it expected something else ('<scalar>', '-', '}')."""
    match = _FOUND.search(exc.problem or "")
    return (match.group(1) or match.group(2) or "") if match else ""


def _in_words(
    exc: yaml.MarkedYAMLError, text: _Text, line: int, column: int
) -> tuple[int, int, str] | None:
    problem = exc.problem or ""
    context = exc.context or ""
    opened = position(exc.context_mark) if exc.context_mark is not None else (line, column)
    if "quoted scalar" in context:
        return _quoted(exc, text, line, column, opened)
    if "found character '\\t'" in problem or "tab character" in problem:
        return line, column, "a tab character; indent with spaces, not tabs"
    starter = re.search(r"found character '(.)' that cannot start any token", problem)
    if starter is not None:
        return line, column, f"text that starts with {starter.group(1)} must be in quotes"
    if "directive" in context:
        return (
            *opened,
            "a line that starts with '%' is a YAML directive; indent it like the text it "
            "belongs to, or put the text in quotes",
        )
    if "tag" in context:
        return *opened, "text that starts with '!' must be in quotes (YAML reads ! as a tag)"
    if "alias" in context:
        return (
            *opened,
            "text that starts with '*' must be in quotes (YAML reads * as an alias)",
        )
    if "anchor" in context:
        return *opened, "text that starts with '&' must be in quotes (YAML reads & as an anchor)"
    if "mapping values are not allowed" in problem:
        return _colon(text, line, column)
    if "mapping keys are not allowed" in problem:
        return line, column, "text that starts with '? ' must be in quotes"
    if "sequence entries are not allowed" in problem:
        return (
            line,
            column,
            "a '- ' list entry cannot follow a key on its line; start the list on the next "
            "line, indented, or put the text in quotes",
        )
    if "could not find expected ':'" in problem:
        written = text.line(opened[0]).strip()
        key = _KEY_VALUE.match(written)
        if key is not None and key.group(2) is not None and ": " not in written:
            word = key.group(1).strip()
            return (
                *opened,
                f"'{_short(written)}' has no space after its ':', so YAML does not read "
                f"'{word}' as a key; {_spaced(word, key.group(2))}",
            )
        return (
            *opened,
            f"'{_short(written)}' is neither 'key: value' nor a '- ' list entry; write a "
            "colon and a space after its key",
        )
    if "block scalar" in context:
        return (
            *opened,
            "text that starts with | or > must be in quotes (YAML reads them as the start "
            "of a block of lines)",
        )
    if "node content" in problem and _found(exc) in ("]", "}"):
        found = _found(exc)
        opener = "[" if found == "]" else "{"
        return line, column, f"this '{found}' closes nothing; remove it, or add its '{opener}'"
    if "flow" in context or ("node content" in problem and "<stream end>" in problem):
        return _flow(exc, text, line, column, opened)
    if "expected <block end>" in problem:
        return _block_end(exc, text, line, column, opened)
    if "another document" in problem or "<document start>" in problem:
        return _second_document(text, line, column)
    return None


def _quoted(
    exc: yaml.MarkedYAMLError, text: _Text, line: int, column: int, opened: tuple[int, int]
) -> tuple[int, int, str]:
    problem = exc.problem or ""
    escape = re.search(r"unknown escape character '(.+)'", problem)
    if escape is not None:
        return (
            line,
            max(column - 1, 1),
            f"'\\{escape.group(1)}' in double quotes is no escape YAML knows; write '\\\\' "
            "for a backslash, or put the text in single quotes",
        )
    quote = text.line(opened[0])[opened[1] - 1 : opened[1]] or '"'
    return *opened, f"the quote ({quote}) opened here is never closed; end the text with {quote}"


def _colon(text: _Text, line: int, column: int) -> tuple[int, int, str]:
    """ "mapping values are not allowed here": a ': ' inside text, mostly; or a key written
    without its space, or indented under a line that already has its value."""
    written = text.line(line)
    for number, earlier in text.before(line):
        key = _KEY_VALUE.match(earlier)
        if key is not None and key.group(2) is not None and ": " not in earlier:
            word = key.group(1).strip()
            return (
                number,
                _indent(earlier) + earlier.lstrip(" ").find(word),
                f"'{_short(earlier.strip())}' has no space after its ':', so YAML reads it, "
                f"and the lines under it, as text; {_spaced(word, key.group(2))}",
            )
        if _indent(earlier) < _indent(written) and _KEY_WITH_TEXT.match(earlier):
            return (
                line,
                _indent(written),
                f"this line is indented further than line {number}, which already has its "
                f"value, so YAML reads it as more of that text; indent it like line {number} "
                f"(column {_indent(earlier) + (2 if _entry(earlier) else 0)})",
            )
        break
    return (
        line,
        column,
        "a colon and a space inside unquoted text read as a new key; put the text in quotes, "
        "or write it as a block after '>-'",
    )


def _flow(
    exc: yaml.MarkedYAMLError, text: _Text, line: int, column: int, opened: tuple[int, int]
) -> tuple[int, int, str]:
    """A [...] or {...} written on one line that is not closed, or holds text it cannot."""
    found = _found(exc)
    if "node content" in (exc.problem or "") or "flow node" in (exc.context or ""):
        opened = _open_bracket(text) or opened
    bracket = text.line(opened[0])[opened[1] - 1 : opened[1]]
    if bracket not in ("[", "{"):
        bracket = "[" if "sequence" in (exc.context or "") else "{"
    closer = "]" if bracket == "[" else "}"
    what = "list" if bracket == "[" else "mapping"
    if found == "<stream end>" or (line > opened[0] and found not in ("{", "[")):
        return (
            *opened,
            f"the '{bracket}' opened here is never closed; end the {what} with '{closer}' "
            "on this line",
        )
    if found in ("{", "["):
        live = text.line(line)[column - 1 : column + 1] == "{{"
        item = "a live value {{...}}" if live else f"text with '{found}'"
        return (
            line,
            column,
            f"{item} inside [...] or {{...}} must be in quotes: put the whole item in quotes",
        )
    if found == "<scalar>":
        return (
            line,
            column,
            f"text goes on after a quoted part of an item of this {what}; put the whole item "
            "in quotes",
        )
    if found == ":":
        return (
            line,
            column,
            "a colon inside an item of a [...] or {...} (a second ': ' in one item); put "
            "the item in quotes",
        )
    if found == "-":
        return (
            line,
            column,
            "a '- ' inside [...] or {...} is not a list entry; write the item without it, or "
            "in quotes",
        )
    return (
        line,
        column,
        f"a ',' or '{closer}' is needed here: items of a [...] or {{...}} are separated by "
        "commas, and an item that holds ',', ':', '?', '[' or '{' must be in quotes",
    )


def _open_bracket(text: _Text) -> tuple[int, int] | None:
    """Where the last '[' or '{' left open in the text is written (quotes and comments
    skipped), if any."""
    stack: list[tuple[int, int]] = []
    for number, written in enumerate(text.lines, start=1):
        quote = ""
        for index, char in enumerate(written):
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"" and (index == 0 or written[index - 1] in " [{,:"):
                quote = char
            elif char == "#" and (index == 0 or written[index - 1] == " "):
                break
            elif char in "[{":
                stack.append((number, index + 1))
            elif char in "]}" and stack:
                stack.pop()
    return stack[-1] if stack else None


def _block_end(
    exc: yaml.MarkedYAMLError, text: _Text, line: int, column: int, opened: tuple[int, int]
) -> tuple[int, int, str]:
    """PyYAML's "expected <block end>": text after a value on its line, a stray closer, or
    a line indented like nothing above it."""
    found = _found(exc)
    written = text.line(line)
    comment = _comment_above(text, line, column)
    if comment is not None:
        return (
            comment,
            _indent(text.line(comment)),
            f"this comment, less indented than the text around it, ends the block of text "
            f"above it, so line {line} is out of place; indent the comment like the text, or "
            "remove it",
        )
    dashed = re.match(r"\s*-(\S+)", written)
    if dashed is not None and column == _indent(written):
        return (
            line,
            column,
            f"'-{_short(dashed.group(1))}' needs a space after its '-' to be a list entry; "
            f"write '- {_short(dashed.group(1))}'",
        )
    if found == "<scalar>":
        before = written[: column - 1].rstrip()
        if before.endswith(("]", "}")):
            return (
                line,
                column,
                "text goes on after a [...] or {...} value; text that starts with [ or { "
                "must be in quotes",
            )
        apostrophe = " (in single quotes, write '' for an apostrophe)" if before[-1:] == "'" else ""
        return (
            line,
            column,
            f"text goes on after a quoted part; put the whole text in quotes{apostrophe}",
        )
    if found in ("]", "}"):
        opener = "[" if found == "]" else "{"
        return line, column, f"this '{found}' closes nothing; remove it, or add its '{opener}'"
    if (
        found in ("?", "<block mapping start>")
        and column == opened[1]
        and _entry(text.line(opened[0]))
    ):
        return (
            line,
            column,
            f"this line is a key where the list that starts at line {opened[0]} holds entries "
            "that start with '- '; start it with '- ' too, or indent it under the entry it "
            "belongs to",
        )
    entry = found in ("-", "<block sequence start>")
    if entry and column == opened[1] and not _entry(text.line(opened[0])):
        return (
            line,
            column,
            f"a '- ' list entry where the lines around it are keys (from line {opened[0]}, "
            f"at column {opened[1]}); write it as 'key: value', or indent it under the key "
            "whose list it belongs to",
        )
    for number, earlier in text.before(line):
        if entry and not _entry(earlier):
            continue
        at = _indent(earlier) if entry else _indent(earlier) + (2 if _entry(earlier) else 0)
        if at == column:
            break
        kind = "list" if entry else "keys"
        relation = "less" if column < at else "more"
        return (
            line,
            column,
            f"this line is indented {relation} than the {kind} above it (from line {number}, "
            f"at column {at}); indent it to column {at}"
            + ("" if entry else ", or under a key that ends with ':' to nest it"),
        )
    for number, earlier in text.before(line):
        at = _indent(earlier) + (2 if _entry(earlier) and not entry else 0)
        if opened[1] < column < at:
            return (
                line,
                column,
                f"this line is at column {column}, between the lines above it: line {number} "
                f"at column {at} and the block from line {opened[0]} at column {opened[1]}; "
                "indent it like one of them",
            )
        break
    return (
        line,
        column,
        f"this line starts at column {column}, which lines up with no entry above it (the "
        f"entries of the block from line {opened[0]} start at column {opened[1]}); indent "
        "it like them",
    )


def _second_document(text: _Text, line: int, column: int) -> tuple[int, int, str]:
    for number, written in enumerate(text.lines, start=1):
        if number > 1 and written.startswith(("---", "...", "%")):
            return (
                number,
                1,
                f"'{_short(written.strip())}' starts another YAML document; a lesson is one "
                "document: remove the line, or indent it",
            )
    for number, earlier in text.before(line):
        if _indent(earlier) > column:
            return (
                line,
                column,
                f"this line is indented less than line {number} above it (column "
                f"{_indent(earlier)}), where the document's top level starts; start every "
                "top-level key at column 1",
            )
        break
    return line, column, "a lesson is one YAML document; remove what follows it"


def _comment_above(text: _Text, line: int, column: int) -> int | None:
    """The comment line just above ``line`` that is less indented than it, if any: such a
    comment ends a block of text (``>-``, ``|``), leaving the lines after it out of place."""
    for index in range(line - 2, -1, -1):
        written = text.lines[index] if index < len(text.lines) else ""
        if not written.strip():
            continue
        if written.lstrip(" ").startswith("#") and _indent(written) < column:
            return index + 1
        return None
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


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
