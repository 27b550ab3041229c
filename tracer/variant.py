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

import keyword
import re
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracer.errors import Location
from tracer.suggest import did_you_mean

if TYPE_CHECKING:
    import torch

    from tracer.inputs import InputSet

STAGE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
VARIANT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

TOKEN_AXES = frozenset({"token", "query", "key", "source"})
"""Axis names whose positions are tokens: only these are labelled with the tokens' text.

``source`` (and ``key``, when the run has a source sequence) label with the source's tokens."""
COMMON_AXES = (
    "token",
    "query",
    "key",
    "source",
    "feature",
    "head",
    "kv_head",
    "step",
    "tile",
    "batch",
)
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
            fixed = re.sub(r"[^a-z0-9_]+", "_", self.name.lower()).strip("_")
            hint = f" (did you mean '{fixed}'?)" if OPTION_NAME.match(fixed) else ""
            raise ValueError(
                f"option name {self.name!r} must be lower-case letters, digits and "
                f"underscores{hint}"
            )
        if self.type not in OPTION_TYPES:
            raise ValueError(
                f"option {self.name!r} has type {self.type!r}; use int, float, bool or str"
            )
        number = isinstance(self.default, (int, float)) and not isinstance(self.default, bool)
        if number and self.min is not None and self.default < self.min:
            raise ValueError(
                f"option {self.name!r} has default {self.default!r}, below its own min={self.min!r}"
            )
        if number and self.max is not None and self.default > self.max:
            raise ValueError(
                f"option {self.name!r} has default {self.default!r}, above its own max={self.max!r}"
            )

    @property
    def is_identifier(self) -> bool:
        """Whether the name can be a Python keyword argument (``lambda`` cannot)."""
        return not keyword.iskeyword(self.name)


class UnknownOption(KeyError):
    """``run.options["windw"]``: a name the variant did not declare, with a did-you-mean."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class OptionValues(dict[str, Any]):
    """``run.options``: a plain dict whose missing keys name the declared ones."""

    def __missing__(self, name: str) -> Any:
        known = sorted(self)
        listed = ", ".join(known) if known else "none"
        raise UnknownOption(
            f"run.options has no option {name!r}{did_you_mean(str(name), known)}; "
            f"the variant declares: {listed}"
        )


@dataclass(frozen=True)
class Weights:
    """Query, key and value projections, each of shape (d_in, d_out), applied as ``x @ W``."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor


@dataclass(frozen=True)
class SourceWeights:
    """Key and value projections for the source sequence, each (source width, d_out)."""

    key: torch.Tensor
    value: torch.Tensor


@dataclass(frozen=True)
class Source:
    """A second sequence: ``run.source`` in cross-attention (keys and values come from it)."""

    inputs: torch.Tensor
    """Its embeddings, shape (source tokens, source width); the width may differ from ``run.inputs``."""
    tokens: tuple[str, ...]
    weights: SourceWeights | None
    """Its key and value projections, for variants with ``uses_weights=True``; None otherwise."""
    default: str | None = None
    """The name of the input set that served as the variant's default source (``ton-voyage``);
    None when the inputs' ``source:`` section or ``--source`` gave it."""


class Tokens(tuple[str, ...]):
    """The tokens of a trace, and the source sequence's tokens (``.source``) when it has one.

    A plain tuple of the main sequence's tokens wherever a tuple is expected; the
    renderers read ``.source`` to label ``source`` axes (and ``key`` axes, whose
    positions are then source tokens).
    """

    source: tuple[str, ...] | None

    def __new__(cls, tokens: Sequence[str], source: Sequence[str] | None = None) -> Tokens:
        made = super().__new__(cls, tokens)
        made.source = tuple(source) if source is not None else None
        return made


def source_tokens(tokens: Sequence[str]) -> tuple[str, ...] | None:
    """The source sequence's tokens carried by ``tokens`` (a :class:`Tokens`), if any."""
    return getattr(tokens, "source", None)


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
    extra: Mapping[str, Any] = field(default_factory=OptionValues)
    """The variant's declared options, checked, with defaults filled in (also ``run.options``).

    The name ``extra`` is the original spelling and keeps working."""
    source: Source | None = None
    """A second sequence (cross-attention's keys and values), when the inputs give one."""

    @property
    def options(self) -> Mapping[str, Any]:
        """The variant's declared options by name: ``run.options["window"]``.

        A name the variant did not declare raises :class:`UnknownOption` (a ``KeyError``)
        that suggests the closest declared one."""
        return self.extra

    def __post_init__(self) -> None:
        if not isinstance(self.extra, OptionValues):
            object.__setattr__(self, "extra", OptionValues(self.extra))

    def focus(
        self, tensor: torch.Tensor, axis: int | str = 0, *, axes: Sequence[str] | None = None
    ) -> torch.Tensor:
        """Row ``query`` of a per-query tensor when one query is focused; the tensor otherwise.

        The query dimension is the first unless ``axis`` says otherwise: its index, or its
        name among ``axes`` (the names you yield the tensor with), so a tensor that puts the
        head first is focused as ``run.focus(w, axes=("head", "query", "key"))``.
        """
        if axes is not None and axis == 0:
            axis = "query"
        if isinstance(axis, str):
            names = [parse_axis(a)[0] for a in axes or ()]
            if axis not in names:
                raise ValueError(
                    f"run.focus: axis '{axis}' is not among the axes {tuple(axes or ())}"
                    f"{did_you_mean(axis, names)}"
                )
            axis = names.index(axis)
        if self.query is None:
            return tensor
        return tensor.select(axis, self.query)

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
    guessed_axes: tuple[str, ...] = ()
    """Tensors that named no axes and were taken as ``("query", "key")`` by the tracer."""


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
    """What this iteration computed, checked by the tracer before anything shows it
    (the first of ``equations`` when it declares several)."""
    files: dict[str, tuple[int, ...]] = field(default_factory=dict)
    guessed_axes: tuple[str, ...] = ()
    """As for :class:`Stage`."""
    equations: tuple[Equation, ...] = ()
    """Every equation the iteration declares, each checked (``equation`` is the first)."""

    def __post_init__(self) -> None:
        if self.equation is not None and not self.equations:
            self.equations = (self.equation,)
        elif self.equations and self.equation is None:
            self.equation = self.equations[0]


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
    """The sub-step computed ``after = before + weight * value`` (a running weighted sum).

    ``weight`` is a single number, or a tensor: when ``weight.shape + value.shape`` is
    the shape of ``before``, the update is their outer product (``S += φ(k) vᵀ`` of
    linear attention: ``Accumulate("S_before", "phi_k", "v", "S")``); otherwise
    ``weight * value`` broadcast to the shape of ``before`` (element by element).
    """

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
    equations: Sequence[Equation] = (),
    **tensors: torch.Tensor,
) -> SubStep:
    """Describe one loop iteration: ``yield substep("scores", (i, j), score=s)``.

    Tensors may have any rank (a growing cache, a tile of scores). ``equation``
    (:class:`Dot` or :class:`Accumulate`) says what the iteration computed, so a
    viewer can write the arithmetic out; the tracer checks it holds. An iteration
    that computes several things declares them all: ``equations=(Dot(...), Accumulate(...))``.
    """
    declared = ((equation,) if equation is not None else ()) + tuple(equations)
    return SubStep(
        stage=stage,
        position=tuple(position),
        tensors=dict(tensors),
        formula=formula,
        axes=_axes(axes, tensors),
        equation=declared[0] if declared else None,
        equations=declared,
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
    optional_stages: tuple[str, ...] = ()
    """Stages among ``stages`` that ``run`` may leave out; every other one must be yielded."""
    declared_at: Location | None = field(default=None, compare=False, repr=False)
    """Where the plugin wrote ``Variant(...)`` (filled in when the variant is made)."""
    inputs: InputSet | None = None
    """The variant's own inputs when the user names none (otherwise: ``your-journey``)."""
    uses_embeddings: bool = True
    """False when ``run`` reads only the tokens (a model with its own embeddings): inputs may
    then give tokens alone, and ``run.inputs`` is (tokens, 0)."""
    source: str | None = None
    """``"required"`` when ``run`` reads a second sequence (``run.source``, cross-attention's
    keys and values). The tracer then always gives one, so ``run.source`` is never None: the
    inputs' ``source:`` section, ``--source``, or else ``default_source``."""
    default_source: str | InputSet | None = field(default=None, compare=False)
    """The source used when none is given, for ``source="required"``: a built-in input set's
    name or an :class:`~tracer.inputs.InputSet`; None means the tracer's default source
    (``ton-voyage``: five tokens of width 4). Its tokens and embeddings are used, not its weights."""
    mistakes: tuple[Mistake, ...] = ()
    """Known mistakes, as changed computations: ``attn check`` names one when it reproduces
    a learner's tensors (see :class:`Mistake`)."""

    def option(self, name: str) -> Option | None:
        """The declared option called ``name``, if any."""
        return next((option for option in self.options if option.name == name), None)

    def __post_init__(self) -> None:
        if self.declared_at is None:
            # The caller of the dataclass __init__ that called us: the plugin's own line.
            caller = sys._getframe(2)
            object.__setattr__(
                self, "declared_at", Location(caller.f_code.co_filename, caller.f_lineno)
            )
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
            raise ValueError(
                f"loops {unknown} of variant {self.name!r} are not among its stages"
                f"{did_you_mean(unknown[0], self.stages)}"
            )
        unknown = [name for name in self.optional_stages if name not in self.stages]
        if unknown:
            raise ValueError(
                f"optional_stages {unknown} of variant {self.name!r} are not among its stages"
                f"{did_you_mean(unknown[0], self.stages)}"
            )
        self._check_source()
        names = [option.name for option in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"variant {self.name!r} declares an option twice: {names}")
        clash = sorted(set(names) & RESERVED_OPTIONS)
        if clash:
            raise ValueError(
                f"option {clash[0]!r} of variant {self.name!r} is a shared trace option; "
                "read it from the RunContext instead"
            )

    def _check_source(self) -> None:
        if self.source not in SOURCE_NEEDS:
            raise ValueError(
                f"source={self.source!r} of variant {self.name!r} must be 'required' or None"
                f"{did_you_mean(str(self.source), [n for n in SOURCE_NEEDS if n])}"
            )
        if self.default_source is None:
            return
        if self.source is None:
            raise ValueError(
                f"variant {self.name!r} gives default_source= but not source='required'"
            )
        # The input sets (and yaml) load for a variant with a default source only:
        # `import tracer`, which every plugin does, stays light.
        from tracer.inputs.builtin import BUILTIN_INPUTS
        from tracer.inputs.input_set import InputSet

        if isinstance(self.default_source, str):
            if self.default_source not in BUILTIN_INPUTS:
                raise ValueError(
                    f"default_source {self.default_source!r} of variant {self.name!r} is not a "
                    f"built-in input set{did_you_mean(self.default_source, BUILTIN_INPUTS)}; "
                    f"built-in sets: {', '.join(sorted(BUILTIN_INPUTS))}"
                )
        elif not isinstance(self.default_source, InputSet):
            raise ValueError(
                f"default_source of variant {self.name!r} must be a built-in input set's name "
                f"or an InputSet, got {type(self.default_source).__name__}"
            )


SOURCE_NEEDS = (None, "required")
"""What ``Variant(source=...)`` may say: nothing, or that ``run`` needs a second sequence."""

RESERVED_OPTIONS = frozenset({"inputs", "seed", "init", "d_out", "dropout", "query"})
"""Options every variant shares; a variant reads them from :class:`RunContext` fields."""
