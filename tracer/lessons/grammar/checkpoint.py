"""The ``checkpoint`` step: a recap, a bare list of points or a title and points
(:data:`tracer.lessons.format.CHECKPOINT`)."""

from __future__ import annotations

import yaml

from tracer.lessons.format import CHECKPOINT
from tracer.lessons.grammar.base import ReaderBase
from tracer.lessons.grammar.nodes import _kind
from tracer.lessons.model import Checkpoint

UNTITLED = str(CHECKPOINT.field("title").default)
"""A checkpoint's title when it gives none."""


class CheckpointReader(ReaderBase):
    """Reading ``checkpoint`` steps."""

    def checkpoint(self, node: yaml.Node, line: int, column: int) -> Checkpoint | None:
        if isinstance(node, yaml.SequenceNode):  # the short form: the points alone
            if not node.value:
                self.problem(node, "checkpoint has no points")
                return None
            points = self.points(node)
            return Checkpoint(UNTITLED, points, line, column) if points is not None else None
        entries = self.mapping(node, CHECKPOINT.what, CHECKPOINT)
        if entries is None:
            return None
        title = self.field_text(CHECKPOINT, entries, "title") if "title" in entries else UNTITLED
        if not self.require(node, CHECKPOINT, entries):
            return None
        points_node = entries["points"][1]
        if not isinstance(points_node, yaml.SequenceNode) or not points_node.value:
            if isinstance(points_node, yaml.SequenceNode):
                self.problem(points_node, "points is empty; give at least one point")
                return None
            self.problem(
                points_node,
                f"points must be a list of text, not {_kind(points_node)}; write each point "
                "on its own '- ' line under 'points:'",
            )
            return None
        points = self.points(points_node)
        if title is None or points is None:
            return None
        return Checkpoint(title, points, line, column)

    def points(self, node: yaml.SequenceNode) -> tuple[str, ...] | None:
        """A checkpoint's points, each prose; None when one of them has a problem."""
        texts = [self.prose(item, "a checkpoint point") for item in node.value]
        if any(text is None for text in texts):
            return None
        return tuple(text for text in texts if text is not None)
