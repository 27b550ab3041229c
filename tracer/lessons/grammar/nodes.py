"""YAML nodes as the reader sees them: plain values, their kinds in a teacher's words, where
they are written, and the small text helpers messages share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import yaml

from tracer.inputs import InputSet
from tracer.lessons.format import COMPARISONS
from tracer.variant import Tokens

if TYPE_CHECKING:
    from tracer.variant import Variant

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"
_POSITIONED = re.compile(r"^(.+)@(\d+)$")
"""``the@3``: a token named with its 0-based position, for a token the text repeats."""


def _at(node: yaml.Node) -> tuple[int, int]:
    """Where ``node`` is written: (line, column), from 1."""
    return node.start_mark.line + 1, node.start_mark.column + 1


def _short_text(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _rejoined_sentences(items: list[yaml.Node]) -> list[yaml.Node]:
    """``hints: [Multiply …, then add.]``: YAML reads a comma in a flow list as a new item,
    so a sentence with a comma became two hints. An unquoted item that starts in lower case
    after one that starts a sentence (a capital) and does not end it (., ?, !, :, ;)
    continues that sentence: the two are one hint, with the text between them as written.
    Quoted items, and lists of lower-case fragments (``[first hint, second hint]``), are
    kept as they are."""
    joined: list[yaml.Node] = []
    for item in items:
        previous = joined[-1] if joined else None
        if (
            isinstance(previous, yaml.ScalarNode)
            and isinstance(item, yaml.ScalarNode)
            and previous.style is None
            and item.style is None
            and str(previous.value)[:1].isupper()
            and str(item.value)[:1].islower()
            and not str(previous.value).rstrip().endswith((".", "?", "!", ":", ";"))
        ):
            buffer = getattr(previous.start_mark, "buffer", None)
            between = (
                buffer[previous.end_mark.index : item.start_mark.index]
                if isinstance(buffer, str)
                else ", "
            )
            text = f"{previous.value}{between}{item.value}"
            joined[-1] = yaml.ScalarNode(
                previous.tag, text, previous.start_mark, item.end_mark, style=None
            )
            continue
        joined.append(item)
    return joined


def _comparison(text: str) -> str | None:
    """``'> 0'`` normalised, or None when it is not an operator and a finite number."""
    text = text.strip()
    for operator in COMPARISONS:
        if text.startswith(operator):
            try:
                number = float(text[len(operator) :].strip())
            except ValueError:
                return None
            finite = number == number and abs(number) != float("inf")
            return f"{operator} {number:g}" if finite else None
    return None


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL


def _is_defaults(node: yaml.Node) -> bool:
    """A steps item that is ``- defaults: ...`` rather than a step."""
    if not isinstance(node, yaml.MappingNode) or not node.value:
        return False
    key = node.value[0][0]
    return isinstance(key, yaml.ScalarNode) and key.value == "defaults"


def _scalar(node: yaml.Node) -> object:
    """The plain value of a scalar node (int, float, bool, None or str); lists/maps give None.

    Never raises: PyYAML's constructors can fail on oddities such as an
    out-of-range timestamp, and a lesson must never crash the tool.
    """
    if not isinstance(node, yaml.ScalarNode):
        return None
    constructor = yaml.constructor.SafeConstructor()
    try:
        if node.tag == _INT:
            return constructor.construct_yaml_int(node)
        if node.tag == _FLOAT:
            return constructor.construct_yaml_float(node)
        if node.tag == _BOOL:
            return constructor.construct_yaml_bool(node)
        if node.tag == _NULL:
            return None
    except (ValueError, ArithmeticError, yaml.YAMLError):
        return str(node.value)
    return str(node.value)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = _scalar(node)
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"true/false ({node.value})"
    if isinstance(value, (int, float)):
        return f"a number ({node.value})"
    shown = str(value)
    return f"text ('{shown if len(shown) <= 30 else shown[:27] + '...'}')"


def _keys(node: yaml.MappingNode) -> list[tuple[str, yaml.Node]]:
    return [(str(k.value), k) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]


def _closest(word: str, choices: Sequence[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def _quoted(texts: Sequence[str]) -> str:
    return ", ".join(f"'{text}'" for text in texts)


def _listing(names: Sequence[str] | dict[str, str]) -> str:
    return ", ".join(names)


def _tokens(inputs: InputSet, variant: Variant | None = None) -> tuple[str, ...]:
    """The inputs' tokens, carrying a second sequence's (``source:``, or else the default
    source of a variant with ``source="required"``) for cells that name them."""
    from tracer.tracing.runner import default_source

    second = inputs.source_sequence
    if second is not None:
        return Tokens(inputs.tokens, second.tokens)
    if variant is not None and variant.source == "required":
        default = default_source(variant)
        return Tokens(inputs.tokens, default.tokens, default_source=default.name)
    return Tokens(inputs.tokens)
