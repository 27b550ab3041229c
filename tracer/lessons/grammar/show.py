"""The ``show`` step: one stage's tensors, optionally focused on a token, a row, a column
or a cell (:data:`tracer.lessons.format.SHOW`)."""

from __future__ import annotations

import yaml

from tracer.lessons.format import FOCUS
from tracer.lessons.grammar.base import Entries, _Scope
from tracer.lessons.grammar.nodes import _kind
from tracer.lessons.grammar.refs import RefReader, _named_token
from tracer.lessons.model import Focus, Show


class ShowReader(RefReader):
    """Reading ``show`` steps."""

    def show(
        self,
        node: yaml.Node,
        entries: Entries,
        scope: _Scope,
        line: int,
        column: int,
    ) -> Show | None:
        ref = self.ref(node, entries, scope, "'show'")
        focus = None
        if "focus" in entries:
            tokens = self._tokens(ref) if ref and ref.options.inputs else scope.tokens
            focus = self.focus(entries["focus"][1], tokens)
        caption = self.caption(entries)
        if ref is None or caption is None or ("focus" in entries and focus is None):
            return None
        return Show(ref, focus, caption, line, column)

    def focus(self, node: yaml.Node, tokens: tuple[str, ...]) -> Focus | None:
        if isinstance(node, yaml.ScalarNode):
            index = self.index(node, "focus", tokens)
            both = (_named_token(node),) * 2
            return Focus("token", index, index, both) if index is not None else None
        entries = self.mapping(node, FOCUS.what, FOCUS)
        if entries is None:
            return None
        if len(entries) != 1:
            if len(node.value) == len(entries):  # unknown keys were reported already
                self.problem(node, f"focus takes exactly one of {_one_of(FOCUS.keys)}")
            return None
        ((key, (_, value)),) = entries.items()
        if key == "cell":
            cell = self.cell(value, tokens)
            if cell is None or len(cell) != 2:
                return None
            names = (
                (_named_token(value.value[0]), _named_token(value.value[1]))
                if isinstance(value, yaml.SequenceNode)
                else ("", "")
            )
            return Focus("cell", cell[0], cell[1], names)
        index = self.index(value, f"focus {key}", tokens)
        if index is None:
            return None
        name = _named_token(value)
        if key == "token":
            return Focus("token", index, index, (name, name))
        if key == "row":
            return Focus("row", row=index, names=(name, ""))
        return Focus("column", column=index, names=("", name))

    def cell(self, node: yaml.Node, tokens: tuple[str, ...]) -> tuple[int, ...] | None:
        if not isinstance(node, yaml.SequenceNode) or not 1 <= len(node.value) <= 2:
            self.problem(
                node, f"cell must be [row, column] (tokens or 0-based indices), not {_kind(node)}"
            )
            return None
        if isinstance(node, yaml.SequenceNode) and len(node.value) == 1:
            self.problem(
                node, "cell must be [row, column] (tokens or 0-based indices), not one value"
            )
            return None
        row = self.index(node.value[0], "cell row", tokens)
        column = self.index(node.value[1], "cell column", tokens)
        if row is None or column is None:
            return None
        return (row, column)


def _one_of(names: tuple[str, ...]) -> str:
    """``a, b, c or d``."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
