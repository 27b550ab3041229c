"""What every part of the reader shares: where a lesson is read from, the problems found so
far, and reading the plain values (text, numbers, indices, mappings) every part asks for."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from tracer.lessons.format import Shape
from tracer.lessons.grammar.keys import PROSE_FIELDS, the
from tracer.lessons.grammar.nodes import _NULL, _POSITIONED, _STR, _kind, _scalar
from tracer.lessons.model import Lesson, Markup, NamedValue, Options, OptionValue, TypedNumber
from tracer.lessons.prose import ANSWER, format_problem, markup, placeholders, typed_numbers
from tracer.lessons.reading import line_column
from tracer.suggest import did_you_mean
from tracer.variant import source_tokens
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost

_T = TypeVar("_T")
_TEXT_KINDS = ("text", "tensor")
"""Kinds of key read as plain text (a tensor's name is checked only when the lesson runs)."""
Entries = dict[str, tuple[yaml.Node, yaml.Node]]
"""A mapping's entries as read: key -> (key node, value node)."""


@dataclass
class _Scope:
    """What a step inherits: the options so far, the tokens of their inputs, and the
    ``defaults:`` in force (a variant and a query the step may leave out)."""

    options: Options
    variant: str | None = None
    query: int | None = None

    @property
    def tokens(self) -> tuple[str, ...]:
        assert self.options.inputs is not None
        return self.options.inputs.tokens


class ReaderBase:
    """The reader's state and its plain-value readers; the parts of the format are read by
    the classes built on it (one module per step kind), joined in :class:`Reader`."""

    def __init__(self, path: str, base_dir: Path, host: PluginHost) -> None:
        self.path = path
        self.base_dir = base_dir
        self.host = host
        self.problems: list[Problem] = []
        self.values: dict[str, NamedValue] = {}
        self.value_names: set[str] = set()
        """Every name under 'values:', even one whose definition has a problem (reported once)."""
        self.typed: list[TypedNumber] = []
        self.markup: list[Markup] = []
        self.warnings: list[Problem] = []
        # Lesson-wide options apply only to the variants that declare them; one no variant
        # in the lesson declares is reported at the end (a misspelling, or a missing plugin).
        self.shared_values: list[OptionValue] = []
        self.used_options: set[str] = set()
        self.used_variants: set[str] = set()
        self.missing_plugins: list[str] = []
        """Plugins the lesson says it needs that are not installed."""
        self.partial: Lesson | None = None
        """The lesson as far as it could be read, even with problems (for 'check')."""
        from tracer.inputs.builtin import BUILTIN_INPUTS
        from tracer.tracing.runner import DEFAULT_INPUTS

        # A copy, told apart by identity: a lesson that names no inputs gets a variant's own.
        self.default_inputs = replace(BUILTIN_INPUTS[DEFAULT_INPUTS])
        self.fatal: str | None = None
        """Why the steps cannot be checked (inputs not found, a plugin not installed): what
        would follow from a default instead is not reported (see :meth:`stop_at`)."""

    def problem(self, node: Any, message: str) -> None:
        mark = getattr(node, "start_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(Problem(line, column, message, self.path))

    def stop_at(self, first: int, why: str) -> None:
        """The problem at ``first`` (reported just now) makes the steps meaningless: say so in
        its own line, and check no step (the first such problem is the one that says it)."""
        if self.fatal is not None or first >= len(self.problems):
            return
        self.fatal = why
        problem = self.problems[first]
        self.problems[first] = Problem(
            problem.line, problem.column, f"{problem.message}; {why}", problem.path
        )

    def warn(self, node: Any, message: str) -> None:
        """Something the lesson may not mean, which it still loads with (check says it)."""
        mark = getattr(node, "start_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.warnings.append(Problem(line, column, f"warning: {message}", self.path))

    def problem_at(self, line: int, column: int, message: str) -> None:
        self.problems.append(Problem(line, column, message, self.path))

    def locate(self, node: yaml.Node, needle: str, nth: int = 0) -> tuple[int, int]:
        """Where the ``nth`` occurrence of ``needle`` is written inside ``node`` (its start if
        the text is not found verbatim, e.g. across a folded line)."""
        start, end = node.start_mark, node.end_mark
        buffer = getattr(start, "buffer", None)
        if isinstance(buffer, str):
            offset = start.index - 1
            for _ in range(nth + 1):
                offset = buffer.find(needle, offset + 1, end.index)
                if offset < 0:
                    break
            if offset >= 0:
                return line_column(buffer, offset)
        return start.line + 1, start.column + 1

    def prose(
        self, node: yaml.Node, what: str, *, quiz: bool = False, answer_ok: bool = False
    ) -> str | None:
        """Text shown to the learner: live values checked, typed numbers noted for 'check'."""
        text = self.text(node, what)
        if text is None:
            return None
        seen: dict[str, int] = {}
        for placeholder in placeholders(text):
            raw = text[placeholder.start : placeholder.end]
            nth = seen.get(raw, 0)
            seen[raw] = nth + 1
            line, column = self.locate(node, raw, nth)
            name = placeholder.name
            if name == ANSWER and quiz:
                if not answer_ok:
                    self.problem_at(
                        line, column, f"{{{{answer}}}} in {the(what)} would give the answer away; "
                        "use it in the explanation",
                    )  # fmt: skip
            elif name not in self.values and name not in self.value_names:
                known = sorted(self.values) + ([ANSWER] if answer_ok else [])
                listing = ", ".join(known) if known else "none; declare them under 'values:'"
                self.problem_at(
                    line, column, f"unknown value '{name}' in {the(what)}"
                    f"{did_you_mean(name, known)}; values: {listing}",
                )  # fmt: skip
            problem = format_problem(placeholder.format)
            if problem is not None:
                self.problem_at(line, column, problem)
        counted: dict[str, int] = {}
        for _, number in typed_numbers(text):
            nth = counted.get(number, 0)
            counted[number] = nth + 1
            line, column = self.locate(node, number, nth)
            self.typed.append(TypedNumber(number, what, line, column))
        marks: dict[str, int] = {}
        for _, written, kind in markup(text):
            first = written.split("\n")[0]  # a folded text is found by its first line
            nth = marks.get(first, 0)
            marks[first] = nth + 1
            line, column = self.locate(node, first, nth)
            self.markup.append(Markup(written, kind, what, line, column))
        self.cut_comment(node, what)
        return text

    def cut_comment(self, node: yaml.Node, what: str) -> None:
        """A plain (unquoted) one-line text followed by ' #': YAML reads the rest as a comment."""
        if not isinstance(node, yaml.ScalarNode) or node.style is not None:
            return
        buffer = getattr(node.end_mark, "buffer", None)
        if not isinstance(buffer, str) or node.start_mark.line != node.end_mark.line:
            return
        rest = buffer[node.end_mark.index : buffer.find("\n", node.end_mark.index)]
        if rest.lstrip(" ").startswith("#"):
            line, column = line_column(buffer, node.end_mark.index + rest.index("#"))
            self.problem_at(
                line, column, f"{the(what)} is cut here: YAML reads ' #' and what follows as a "
                "comment; put the text in quotes to keep it",
            )  # fmt: skip

    def mapping(
        self, node: yaml.Node, what: str, allowed: Shape | Sequence[str] | None
    ) -> Entries | None:
        """The entries of a mapping node (key -> (key node, value node)), unknown keys reported
        (``allowed`` None: any key). A :class:`~tracer.lessons.format.Shape`'s old spellings
        are read as the keys they stand for, with a warning naming the new one."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping, not {_kind(node)}")
            return None
        old = allowed.old_spellings if isinstance(allowed, Shape) else {}
        keys = allowed.keys if isinstance(allowed, Shape) else allowed
        entries: Entries = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, f"keys in {what} must be plain words, not {_kind(key_node)}")
                continue
            key = str(key_node.value)
            if key in old:
                key = self.old_spelling(key_node, what, key, old[key], node)
                if not key:
                    continue
            elif keys is not None and key not in keys:
                self.problem(
                    key_node,
                    f"unknown key '{key}' in {what}{did_you_mean(key, keys)}; "
                    f"expected {', '.join(keys)}",
                )
                continue
            entries[key] = (key_node, value_node)
        return entries

    def old_spelling(
        self, key_node: yaml.Node, what: str, key: str, new: str, node: yaml.MappingNode
    ) -> str:
        """``new`` for the old spelling ``key`` (warned about), or "" when both are written."""
        if any(isinstance(k, yaml.ScalarNode) and k.value == new for k, _ in node.value):
            self.problem(key_node, f"'{key}' is the old spelling of '{new}' in {what}, which is "
                         "given too; keep only one")  # fmt: skip
            return ""
        self.warn(key_node, f"'{key}' is the old spelling of '{new}' in {what}; write '{new}'")
        return new

    def require(
        self, node: yaml.Node, shape: Shape, present: Collection[str], what: str = ""
    ) -> bool:
        """Report each key ``shape`` requires that is not ``present`` (the entries read);
        True when none is missing. ``what`` names the mapping in the messages (default: the
        shape's own name)."""
        missing = [key for key in shape.required if key not in present]
        for key in missing:
            self.problem(node, shape.missing(key, what))
        return not missing

    def field_text(self, shape: Shape, entries: Entries, name: str) -> str | None:
        """The text written for ``shape``'s key ``name`` (a text or a name, by the table),
        or None after reporting it (or when it is not written)."""
        field = shape.field(name)
        assert field.kind in _TEXT_KINDS, f"{shape.name}.{name} is {field.kind}, not text"
        return self.text(entries[name][1], name) if name in entries else None

    def field_integer(self, shape: Shape, entries: Entries, name: str) -> int | None:
        """The whole number written for ``shape``'s key ``name``, at least the table's
        minimum, or None after reporting it (or when it is not written)."""
        field = shape.field(name)
        assert field.kind == "integer", f"{shape.name}.{name} is {field.kind}, not integer"
        least = None if field.minimum is None else int(field.minimum)
        return self.integer(entries[name][1], name, minimum=least) if name in entries else None

    def text(self, node: yaml.Node, what: str, *, empty_ok: bool = False) -> str | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL:
            hint = ""
            if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) and what in PROSE_FIELDS:
                bracket = "[" if isinstance(node, yaml.SequenceNode) else "{"
                hint = f"; text starting with '{bracket}' must be in quotes"
                if not node.flow_style and isinstance(node, yaml.MappingNode):
                    hint = "; text that holds ': ' (a colon and a space) must be in quotes"
                elif not node.flow_style:
                    hint = "; text that starts with '- ' must be in quotes"
            self.problem(node, f"{what} must be text, not {_kind(node)}{hint}")
            return None
        value = str(node.value)
        if not value.strip() and not empty_ok:
            self.problem(node, f"{what} is empty")
            return None
        return value

    def integer(self, node: yaml.Node, what: str, *, minimum: int | None = None) -> int | None:
        value = _scalar(node)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(node, f"{what} must be a whole number, not {_kind(node)}")
            return None
        if minimum is not None and value < minimum:
            self.problem(node, f"{what} must be at least {minimum}, got {value}")
            return None
        return value

    def number(self, node: yaml.Node, what: str) -> float | None:
        value = _scalar(node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(node, f"{what} must be a number, not {_kind(node)}")
            return None
        if value != value or value in (float("inf"), float("-inf")):
            self.problem(node, f"{what} must be a finite number, got {node.value}")
            return None
        return float(value)

    def index(
        self, node: yaml.Node, what: str, tokens: tuple[str, ...], size: int | None = None
    ) -> int | None:
        """A 0-based index into the tokens, given as a number or as a token."""
        value = _scalar(node)
        limit = len(tokens) if size is None else size
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                self.problem(node, f"{what} {value} is out of range: indices start at 0")
                return None
            if value >= limit:
                shown = f"{value:,}" if value >= 10**6 else str(value)
                self.problem(
                    node, f"{what} {shown} is out of range: valid indices are 0 to {limit - 1:,}"
                )
                return None
            return value
        if isinstance(value, str) and value:
            return self.token_index(node, what, value, tokens)
        self.problem(node, f"{what} must be a token or a 0-based index, not {_kind(node)}")
        return None

    def token_index(
        self, node: yaml.Node, what: str, value: str, tokens: tuple[str, ...]
    ) -> int | None:
        """The index of the token ``value`` (``the@3``: the one at 3; a source's token: its
        place in the source)."""
        positions = [index for index, token in enumerate(tokens) if token == value]
        also = [i for i, token in enumerate(source_tokens(tokens) or ()) if token == value]
        if positions and also and also != positions:
            # Cross-attention: a cell, a focus or a pick reads it on a key axis as the
            # source's (the runner's cell_of, focus_of, read_pick), anything else as the
            # target's; a learner's typed cells refuse it where the table labels it twice
            # (grading's in_both).
            self.warn(
                node,
                f"{what} '{value}' is in both sequences: token "
                f"{', '.join(map(str, positions))} of the target and "
                f"{', '.join(map(str, also))} of the source (counted from 0); a cell, "
                "a focus or a pick reads it on a key axis as the source's, anything else "
                "(a query) as the target's; write the 0-based index to say which",
            )
            return positions[0]
        if len(positions) > 1:
            # The first may not be the one meant, so it is never picked silently; but
            # lessons written before 'the@3' existed meant the first, and keep loading.
            named = ", ".join(f"'{value}@{index}'" for index in positions)
            self.warn(
                node,
                f"{what} '{value}' is ambiguous: it is tokens "
                f"{', '.join(map(str, positions))} (numbered from 0), and the first is "
                f"used; name one with its position: {named}",
            )
            return positions[0]
        if positions:
            return positions[0]
        at = _POSITIONED.match(value)
        if at is not None:  # 'the@3': a repeated token, named with its position
            return self.positioned(node, what, at.group(1), int(at.group(2)), tokens)
        source = source_tokens(tokens) or ()  # a second sequence's tokens name its positions
        if value in source:
            return source.index(value)
        self.not_a_token(node, what, value, tokens, source)
        return None

    def not_a_token(
        self,
        node: yaml.Node,
        what: str,
        value: str,
        tokens: tuple[str, ...],
        source: tuple[str, ...],
    ) -> None:
        known = (*tokens, *source)
        default = getattr(tokens, "default_source", None)
        note = ""
        if default is not None:
            note = (
                f" (the lesson gives no source, so the default source '{default}', "
                f"'{' '.join(source)}', was used; give one with a 'source:' section in "
                "the inputs)"
            )
        self.problem(
            node,
            f"{what} '{value}' is not one of the tokens{did_you_mean(value, known)}; "
            f"tokens: {' '.join(tokens)}"
            + (f"; source: {' '.join(source)}" if source else "")
            + note,
        )

    def positioned(
        self, node: yaml.Node, what: str, token: str, position: int, tokens: tuple[str, ...]
    ) -> int | None:
        """``token@position``: the token at that 0-based position of the main sequence
        (or, for a word only the source has, of the source), checked to be that token."""
        source = source_tokens(tokens) or ()
        sequence, which = tokens, "tokens"
        if token not in tokens and token in source:
            sequence, which = source, "source tokens"
        if token not in sequence:
            return self.index(
                yaml.ScalarNode(_STR, token, node.start_mark, node.end_mark), what, tokens
            )
        if not 0 <= position < len(sequence) or sequence[position] != token:
            places = [str(i) for i, t in enumerate(sequence) if t == token]
            found = f"'{sequence[position]}'" if 0 <= position < len(sequence) else "out of range"
            self.problem(
                node,
                f"{what} '{token}@{position}': {which[:-1]} {position} is {found}, not '{token}'; "
                f"'{token}' is at {', '.join(places)} (numbered from 0)",
            )
            return None
        return position

    def query(self, node: yaml.Node, tokens: tuple[str, ...]) -> int | None:
        """A query token or index; an empty value (``query: ~``) means every query."""
        if isinstance(node, yaml.ScalarNode) and node.tag == _NULL:
            return None
        return self.index(node, "query", tokens)

    def caption(self, entries: dict[str, tuple[yaml.Node, yaml.Node]]) -> str | None:
        if "caption" not in entries:
            return ""
        return self.prose(entries["caption"][1], "caption")
