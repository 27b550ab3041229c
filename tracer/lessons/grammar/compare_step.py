"""The ``compare`` step: two tensors side by side, keys on the step shared by both sides
(:data:`tracer.lessons.format.COMPARE`)."""

from __future__ import annotations

from dataclasses import replace

import yaml

from tracer.lessons.format import COMPARE, SIDE
from tracer.lessons.grammar.base import Entries, _Scope
from tracer.lessons.grammar.keys import REF_KEYS
from tracer.lessons.grammar.refs import RefReader
from tracer.lessons.model import Compare, TensorRef


class CompareReader(RefReader):
    """Reading ``compare`` steps."""

    def compare(
        self,
        node: yaml.Node,
        entries: Entries,
        scope: _Scope,
        line: int,
        column: int,
    ) -> Compare | None:
        # Keys given on 'compare' itself are shared by both sides; each side may override them.
        shared = {
            k: v for k, v in entries.items() if k in REF_KEYS and k not in ("inputs", "options")
        }
        side_scope = _Scope(self.options(entries, scope.options), scope.variant, scope.query)
        self.require(node, COMPARE, entries)
        sides: list[TensorRef | None] = []
        for side in ("left", "right"):
            if side not in entries:
                sides.append(None)
                continue
            side_node = entries[side][1]
            side_entries = self.mapping(side_node, f"'{side}'", SIDE)
            if side_entries is None:
                sides.append(None)
                continue
            ref = self.ref(side_node, {**shared, **side_entries}, side_scope, f"'{side}'")
            label = self.field_text(SIDE, side_entries, "label")
            if label is not None and "{{" in label:
                where = self.locate(side_entries["label"][1], "{{")
                self.problem_at(
                    *where,
                    "a label is shown as written: live values ({{name}}) are filled in only in "
                    "narration, captions and quizzes; put the value in the caption",
                )
                label = None
            if ref is not None and label is not None:
                ref = replace(ref, label=label)
            sides.append(ref)
        caption = self.caption(entries)
        left, right = sides
        if left is None or right is None or caption is None:
            return None
        return Compare(left, right, caption, line, column)
