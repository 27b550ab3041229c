"""What a plugin author writes against: a :class:`Variant` and the steps it yields.

A variant's ``run`` function is a generator. It receives a :class:`RunContext`
(the inputs, the weights and the options), computes with ordinary torch code,
and ``yield``\\ s a :func:`stage` each time it has produced something worth
showing. Loops may also yield :func:`substep` records, one per iteration;
they are produced lazily, only as far as the reader steps. The generator's
``return`` value is the variant's output (the context vectors).

The tracer records, for every step, which lines of the plugin's own file ran
since the previous step, so a plugin never names its own line numbers.

This module must not import torch at runtime: ``import tracer`` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

STAGE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
VARIANT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class Weights:
    """Query, key and value projections, each of shape (d_in, d_out), applied as ``x @ W``."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor


@dataclass(frozen=True)
class RunContext:
    """Everything a variant's ``run`` function receives."""

    inputs: torch.Tensor
    """The embeddings, shape (tokens, d_in)."""
    tokens: tuple[str, ...]
    weights: Weights | None
    """Projections for variants with ``uses_weights=True``; None otherwise."""
    query: int | None = None
    """The focused query token (0-based), or None for all queries at once."""
    dropout: float = 0.0
    seed: int = 123
    init: str | None = "rand"
    """How the weights were made (``rand``, ``randn``, ``linear``); None when an inputs file gave them."""
    padding: tuple[bool, ...] | None = None
    """True for tokens that are padding and must never be attended to."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Options for variants that need more (for example ``heads``)."""

    def focus(self, tensor: torch.Tensor) -> torch.Tensor:
        """Row ``query`` of a per-query tensor when one query is focused; the tensor otherwise."""
        return tensor if self.query is None else tensor[self.query]

    @property
    def query_indices(self) -> range:
        """The query positions to compute: just the focused one, or all of them."""
        if self.query is None:
            return range(self.inputs.shape[0])
        return range(self.query, self.query + 1)


@dataclass
class Stage:
    """One named point in the computation, and the tensors it produced."""

    name: str
    title: str
    tensors: dict[str, torch.Tensor]
    formula: str | None = None
    lines: tuple[int, ...] = ()
    """Lines of the plugin's file that ran to compute this stage (filled in by the tracer)."""
    source_file: str | None = None
    index: int = -1
    """Position among the stages of its trace (filled in by the tracer)."""


@dataclass
class SubStep:
    """One iteration of a loop inside a stage, such as the score of one (query, key) pair."""

    stage: str
    """The stage this loop is building."""
    position: tuple[int, ...]
    """Where in the stage's tensor this iteration writes, e.g. (i, j)."""
    tensors: dict[str, torch.Tensor]
    formula: str | None = None
    lines: tuple[int, ...] = ()
    source_file: str | None = None
    index: int = -1
    """Position among the sub-steps of its loop (filled in by the tracer)."""


Step = Stage | SubStep
RunFunction = Callable[[RunContext], Generator[Step, None, "torch.Tensor"]]


def stage(name: str, title: str, *, formula: str | None = None, **tensors: torch.Tensor) -> Stage:
    """Describe a stage: ``yield stage("scores", "Attention scores", scores=scores)``."""
    return Stage(name=name, title=title, tensors=dict(tensors), formula=formula)


def substep(
    stage: str, position: tuple[int, ...], *, formula: str | None = None, **tensors: torch.Tensor
) -> SubStep:
    """Describe one loop iteration: ``yield substep("scores", (i, j), score=s)``."""
    return SubStep(stage=stage, position=tuple(position), tensors=dict(tensors), formula=formula)


@dataclass(frozen=True)
class Variant:
    """An attention variant, as registered by a plugin."""

    name: str
    """Stable, lower-case name used on the command line and in lessons (``trainable``)."""
    title: str
    run: RunFunction
    stages: tuple[str, ...]
    """Every stage name ``run`` may yield, in order. Lessons are checked against these."""
    description: str = ""
    uses_weights: bool = True
    """Whether ``run`` needs query/key/value projections."""
    loops: tuple[str, ...] = ()
    """Stages built by a loop that yields sub-steps."""

    def __post_init__(self) -> None:
        if not VARIANT_NAME.match(self.name):
            raise ValueError(
                f"variant name {self.name!r} must be lower-case letters, digits and hyphens"
            )
        for name in self.stages:
            if not STAGE_NAME.match(name):
                raise ValueError(
                    f"stage name {name!r} of variant {self.name!r} must be lower-case "
                    "letters, digits and underscores"
                )
        unknown = [loop for loop in self.loops if loop not in self.stages]
        if unknown:
            raise ValueError(f"loops {unknown} of variant {self.name!r} are not among its stages")
