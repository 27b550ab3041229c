"""The ``loop`` step: the sub-steps of a stage a variant builds with a loop
(:data:`tracer.lessons.format.LOOP`)."""

from __future__ import annotations

import yaml

from tracer.lessons.format import LOOP
from tracer.lessons.grammar.base import Entries, _Scope
from tracer.lessons.grammar.refs import RefReader
from tracer.lessons.model import Loop


class LoopReader(RefReader):
    """Reading ``loop`` steps."""

    def loop(
        self,
        node: yaml.Node,
        entries: Entries,
        scope: _Scope,
        line: int,
        column: int,
    ) -> Loop | None:
        variant, ok = self.step_variant(node, entries, scope, LOOP.what)
        options = self.step_options(variant, entries, scope)
        tokens = options.inputs.tokens if options.inputs is not None else scope.tokens
        stage = None
        if self.require(node, LOOP, entries):
            stage = self.step_stage(entries["stage"][1], variant)
            if stage is not None and variant is not None:
                stage = self.looped(entries["stage"][1], variant, stage)
        query, query_ok = self.step_query(entries, scope, tokens)
        ok = ok and query_ok
        limit = None
        if "limit" in entries:
            limit = self.field_integer(LOOP, entries, "limit")
            ok = ok and limit is not None
        caption = self.caption(entries)
        if not ok or variant is None or stage is None or caption is None:
            return None
        return Loop(variant, stage, query, options, limit, caption, line, column)

    def looped(self, node: yaml.Node, variant: str, stage: str) -> str | None:
        """``stage``, when ``variant`` builds it with a loop (it lists it in ``loops``)."""
        loops = self.host.variants[variant].loops
        if stage in loops:
            return stage
        if loops:
            message = (
                f"stage '{stage}' of '{variant}' is not built by a loop; "
                f"its loops: {', '.join(loops)}"
            )
        else:
            with_loops = sorted(n for n, v in self.host.variants.items() if v.loops)
            message = (
                f"variant '{variant}' has no loops to step through; "
                f"variants with loops: {', '.join(with_loops) or 'none'}"
            )
        self.problem(node, message)
        return None
