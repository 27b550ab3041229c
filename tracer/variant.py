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
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

STAGE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
VARIANT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

TOKEN_AXES = frozenset({"token", "query", "key"})
"""Axis names whose positions are tokens: only these are labelled with the tokens' text."""
COMMON_AXES = ("token", "query", "key", "feature", "head", "kv_head", "step", "tile", "batch")
"""The axis names the built-in variants use; any other lower-case name is allowed too."""
OPTION_TYPES: tuple[type, ...] = (int, float, bool, str)


def parse_axis(spec: str) -> tuple[str, int]:
    """An axis name and its token offset: ``"key:4"`` -> ``("key", 4)``, ``"feature"`` -> 0."""
    name, _, offset = spec.partition(":")
    return name, int(offset) if offset.isdigit() else 0


@dataclass(frozen=True)
class Option:
    """An option a variant declares: ``Option("window", int, 2, "keys each query sees", min=1)``.

    Users set it with ``-o window=3`` on the command line or ``options: {window: 3}`` in a
    lesson; the value is checked against ``type``, ``min``, ``max`` and ``choices`` before the
    run starts, and reaches the variant as ``run.options["window"]``.
    """

    name: str
    type: type
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if not OPTION_NAME.match(self.name):
            raise ValueError(
                f"option name {self.name!r} must be lower-case letters, digits and underscores"
            )
        if self.type not in OPTION_TYPES:
            raise ValueError(
                f"option {self.name!r} has type {self.type!r}; use int, float, bool or str"
            )


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
    """The variant's declared options, checked, with defaults filled in (also ``run.options``).

    The name ``extra`` is the original spelling and keeps working."""

    @property
    def options(self) -> Mapping[str, Any]:
        """The variant's declared options by name: ``run.options["window"]``."""
        return self.extra

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
    """Lines of ``source_file`` that ran to compute this stage (filled in by the tracer)."""
    source_file: str | None = None
    """The plugin file whose code yielded this stage (filled in by the tracer)."""
    index: int = -1
    """Position among the stages of its trace (filled in by the tracer)."""
    axes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Axis names per tensor, e.g. ``{"scores": ("query", "key")}``; missing means unnamed."""
    files: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Every plugin file that ran for this stage and its lines (filled in by the tracer)."""

    def _repr_html_(self) -> str:
        """Jupyter's view of a stage (see tracer.notebook); alone it knows no tokens: indices."""
        from tracer.notebook import stage_html

        return stage_html(self)


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
    axes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Axis names per tensor, as for :class:`Stage`."""
    equation: Equation | None = None
    """What this iteration computed, checked by the tracer before anything shows it."""
    files: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Dot:
    """The sub-step computed ``result = sum(a * b)`` from its 1-d tensors ``a`` and ``b``.

    Declaring it lets a viewer write out the products term by term; the tracer
    checks that the numbers agree before the sub-step is shown.
    """

    a: str
    b: str
    result: str


@dataclass(frozen=True)
class Accumulate:
    """The sub-step computed ``after = before + weight * value`` (a running weighted sum)."""

    before: str
    weight: str
    value: str
    after: str


Equation = Dot | Accumulate
AxesSpec = Mapping[str, Sequence[str]] | Sequence[str] | None


Step = Stage | SubStep
RunFunction = Callable[[RunContext], Generator[Step, None, "torch.Tensor"]]


def _axes(spec: AxesSpec, tensors: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Axis names per tensor; a bare sequence names the axes of every tensor alike."""
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return {str(name): tuple(str(a) for a in axes) for name, axes in spec.items()}
    names = tuple(str(a) for a in spec)
    return {name: names for name in tensors}


def stage(
    name: str,
    title: str,
    *,
    formula: str | None = None,
    axes: AxesSpec = None,
    **tensors: torch.Tensor,
) -> Stage:
    """Describe a stage: ``yield stage("scores", "Scores", axes=("query", "key"), scores=s)``.

    ``axes`` names each tensor's dimensions, either one sequence for every tensor
    of the stage or a mapping from tensor name to its axis names. Only ``token``,
    ``query`` and ``key`` axes are labelled with the tokens.
    """
    return Stage(
        name=name, title=title, tensors=dict(tensors), formula=formula, axes=_axes(axes, tensors)
    )


def substep(
    stage: str,
    position: tuple[int, ...],
    *,
    formula: str | None = None,
    axes: AxesSpec = None,
    equation: Equation | None = None,
    **tensors: torch.Tensor,
) -> SubStep:
    """Describe one loop iteration: ``yield substep("scores", (i, j), score=s)``.

    Tensors may have any rank (a growing cache, a tile of scores). ``equation``
    (:class:`Dot` or :class:`Accumulate`) says what the iteration computed, so a
    viewer can write the arithmetic out; the tracer checks it holds.
    """
    return SubStep(
        stage=stage,
        position=tuple(position),
        tensors=dict(tensors),
        formula=formula,
        axes=_axes(axes, tensors),
        equation=equation,
    )


@dataclass(frozen=True)
class Mistake:
    """A mistake learners make in this variant, written as a change to its computation.

    ``make`` receives the same :class:`RunContext` as ``run`` and returns what the
    mistaken code computes, by the variant's tensor names (``weights``, ``context``...).
    ``attn check`` names the mistake when a learner's tensors equal these, whatever
    their code looks like. ``advice`` says what to do instead, in one or two sentences.
    """

    code: str
    """Stable identifier, e.g. ``window-off-by-one``."""
    title: str
    advice: str
    make: Callable[[RunContext], Mapping[str, Any]]
    ops: tuple[str, ...] = ()
    """Torch operations that make what this mistake changes (``cat`` for a cache): when no
    tensor of the learner's equals one the mistake makes, the line of the first of these
    the learner's code ran is named."""


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
    options: tuple[Option, ...] = ()
    """Options the variant accepts (``-o NAME=VALUE``, a lesson's ``options:``)."""
    mistakes: tuple[Mistake, ...] = ()
    """Known mistakes, as changed computations: ``attn check`` names one when it reproduces
    a learner's tensors (see :class:`Mistake`)."""

    def option(self, name: str) -> Option | None:
        """The declared option called ``name``, if any."""
        return next((option for option in self.options if option.name == name), None)

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
        names = [option.name for option in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"variant {self.name!r} declares an option twice: {names}")
        clash = sorted(set(names) & RESERVED_OPTIONS)
        if clash:
            raise ValueError(
                f"option {clash[0]!r} of variant {self.name!r} is a shared trace option; "
                "read it from the RunContext instead"
            )


RESERVED_OPTIONS = frozenset({"inputs", "seed", "init", "d_out", "dropout", "query"})
"""Options every variant shares; a variant reads them from :class:`RunContext` fields."""
