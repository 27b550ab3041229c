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
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracer.declared import (
    OPTION_NAME as OPTION_NAME,
)
from tracer.declared import (
    OPTION_TYPES as OPTION_TYPES,
)
from tracer.declared import (
    PARAM_DIMS as PARAM_DIMS,
)
from tracer.declared import (
    PARAM_INITS as PARAM_INITS,
)
from tracer.declared import (
    Option as Option,
)
from tracer.declared import (
    Param as Param,
)
from tracer.declared import (
    deferred_declarations as deferred_declarations,
)
from tracer.declared import (
    deferring as deferring,
)
from tracer.declared import (
    dim_names as dim_names,
)
from tracer.declared import (
    dim_value as dim_value,
)
from tracer.declared import (
    fits_type as fits_type,
)
from tracer.equations import (
    ELEMENTWISE as ELEMENTWISE,
)
from tracer.equations import (
    STAGE_EQUATIONS as STAGE_EQUATIONS,
)
from tracer.equations import (
    Accumulate as Accumulate,
)
from tracer.equations import (
    AddBias as AddBias,
)
from tracer.equations import (
    Difference as Difference,
)
from tracer.equations import (
    Dot as Dot,
)
from tracer.equations import (
    Elementwise as Elementwise,
)
from tracer.equations import (
    Equation as Equation,
)
from tracer.equations import (
    MatMul as MatMul,
)
from tracer.equations import (
    Scale as Scale,
)
from tracer.equations import (
    StageEquation as StageEquation,
)
from tracer.equations import (
    Sum as Sum,
)
from tracer.equations import (
    equation_formula as equation_formula,
)
from tracer.equations import (
    equation_json as equation_json,
)
from tracer.errors import Location
from tracer.suggest import did_you_mean

if TYPE_CHECKING:
    import torch

    from tracer.inputs import InputSet

STAGE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
VARIANT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")

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


def parse_axis(spec: str) -> tuple[str, int]:
    """An axis name and its token offset: ``"key:4"`` -> ``("key", 4)``, ``"feature"`` -> 0."""
    name, _, offset = spec.partition(":")
    return name, int(offset) if offset.isdigit() else 0


class ParamValues(dict[str, Any]):
    """``run.params``: a plain dict whose missing keys name the declared ones."""

    inits: Mapping[str, str] = {}
    """How each was made: an init (``randn``...), or ``inputs`` when the inputs gave it."""

    def __missing__(self, name: str) -> Any:
        known = sorted(self)
        listed = ", ".join(known) if known else "none (declare them with Variant(params=...))"
        raise UnknownOption(
            f"run.params has no parameter {name!r}{did_you_mean(str(name), known)}; "
            f"the variant declares: {listed}"
        )


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
    default_source: str | None
    """The name of the input set that gave ``source`` when nobody else did (the variant's
    default source), so a message can say so; None when the inputs or the user gave it."""

    def __new__(
        cls,
        tokens: Sequence[str],
        source: Sequence[str] | None = None,
        default_source: str | None = None,
    ) -> Tokens:
        made = super().__new__(cls, tokens)
        made.source = tuple(source) if source is not None else None
        made.default_source = default_source if source is not None else None
        return made


def source_tokens(tokens: Sequence[str]) -> tuple[str, ...] | None:
    """The source sequence's tokens carried by ``tokens`` (a :class:`Tokens`), if any."""
    return getattr(tokens, "source", None)


class _Noted:
    """``RunContext.padding``: a field whose reads are counted, so the tracer can say that a
    variant was given padding it never looked at (its padded tokens then count like any other).

    The value and the count live in the context's ``__dict__`` (a frozen dataclass's fields
    are set once, through ``__set__``); :func:`given_padding` and :func:`padding_reads` read
    them without counting, for the tracer's own use."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name
        self.reads = "_" + name + "_reads"

    def __get__(self, run: object | None, owner: type | None = None) -> tuple[bool, ...] | None:
        if run is None:  # the dataclass asking for the field's default
            return None
        values = run.__dict__
        values[self.reads] = values.get(self.reads, 0) + 1
        found: tuple[bool, ...] | None = values.get(self.slot)
        return found

    def __set__(self, run: object, value: Sequence[bool] | None) -> None:
        run.__dict__[self.slot] = tuple(value) if value is not None else None


def given_padding(run: RunContext) -> tuple[bool, ...] | None:
    """``run.padding`` read without counting the read (the tracer's own look)."""
    found: tuple[bool, ...] | None = run.__dict__.get("_padding")
    return found


def padding_reads(run: RunContext) -> int:
    """How many times ``run.padding`` has been read (by a variant, or anyone else)."""
    count: int = run.__dict__.get("_padding_reads", 0)
    return count


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
    # Typed as what it holds (the descriptor gives it): help() and editors show the tuple.
    padding: tuple[bool, ...] | None = _Noted()  # type: ignore[assignment]
    """True for tokens that are padding and must never be attended to (None: no padding).

    Reading it is noted: a trace given padding its variant never read says so."""
    extra: Mapping[str, Any] = field(default_factory=OptionValues)
    """The variant's declared options, checked, with defaults filled in (also ``run.options``).

    The name ``extra`` is the original spelling and keeps working."""
    source: Source | None = None
    """A second sequence (cross-attention's keys and values), when the inputs give one."""
    params: Mapping[str, torch.Tensor] = field(default_factory=ParamValues)
    """The variant's declared learnt parameters (``Variant(params=...)``) by name: from the
    inputs' ``params:`` section, or drawn from ``seed``."""
    d_out: int | None = None
    """The width of the projections (``--d-out``); None when the variant uses no weights."""
    text: str | None = None
    """The text the tokens were split from (``--text``, an inputs file's ``text:``), for a
    variant that tokenizes (``Variant(tokenize=...)``); None otherwise."""

    @property
    def options(self) -> Mapping[str, Any]:
        """The variant's declared options by name: ``run.options["window"]``.

        A name the variant did not declare raises :class:`UnknownOption` (a ``KeyError``)
        that suggests the closest declared one."""
        return self.extra

    def __post_init__(self) -> None:
        if not isinstance(self.extra, OptionValues):
            object.__setattr__(self, "extra", OptionValues(self.extra))
        if not isinstance(self.params, ParamValues):
            object.__setattr__(self, "params", ParamValues(self.params))

    def dropout_weights(
        self, weights: torch.Tensor, *, query: int | bool | None = True
    ) -> torch.Tensor:
        """``weights`` with ``--dropout`` applied the way every built-in applies it.

        The mask comes from numpy's ``RandomState(seed)`` (see :func:`tracer.dropout.dropout`);
        with a query focused, ``weights`` is that query's row and the row of the full mask is
        taken (``query=False``: ``weights`` holds every query, even when one is focused)."""
        from tracer.dropout import dropout

        row = self.query if query is True else (None if query is False else query)
        return dropout(weights, self.dropout, self.seed, query=row)

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
    formulas: dict[str, str] = field(default_factory=dict)
    """A formula per tensor (``stage(..., formulas={"mask": "M[i,j] = j > i"})``), for the
    tensors ``formula`` does not describe."""
    equations: tuple[StageEquation, ...] = ()
    """What the stage computed (``stage(..., equation=MatMul("weights", "values", "context"))``),
    each checked by the tracer when the stage is yielded."""

    def formula_for(self, tensor: str) -> str | None:
        """The formula that describes ``tensor``: its own (``formulas=``), else the stage's
        ``formula`` for the main (first) tensor, or for every tensor when the stage gives
        no per-tensor formulas (as plugins written before ``formulas=`` did)."""
        if tensor in self.formulas:
            return self.formulas[tensor]
        main = next(iter(self.tensors), None)
        if not self.formulas or tensor == main:
            return self.formula
        return None


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
    formulas: Mapping[str, str] | None = None,
    equation: StageEquation | None = None,
    equations: Sequence[StageEquation] = (),
    **tensors: torch.Tensor,
) -> Stage:
    """Describe a stage: ``yield stage("scores", "Scores", axes=("query", "key"), scores=s)``.

    ``axes`` names each tensor's dimensions, either one sequence for every tensor
    of the stage or a mapping from tensor name to its axis names. Only ``token``,
    ``query`` and ``key`` axes are labelled with the tokens. ``formula`` describes the
    main (first) tensor; ``formulas`` gives other tensors their own
    (``formulas={"mask": "M[i,j] = j > i"}``), and a tensor with none shows no formula.
    A tensor whose name is a Python keyword is passed as ``**{"global": g}``.

    ``equation`` (:class:`MatMul`, :class:`Elementwise`, :class:`Sum`, :class:`Difference`,
    :class:`AddBias`) says what the stage computed, from its own tensors, earlier stages'
    tensors and the variant's parameters, by name; the tracer checks that it holds. An
    equation is the formula of the tensor it gives, unless ``formula``/``formulas`` say
    otherwise. Several: ``equations=(...)``.
    """
    # A plugin written before equations existed may yield a tensor called ``equation``.
    if equation is not None and not isinstance(equation, (*STAGE_EQUATIONS, Dot, Accumulate)):
        tensors["equation"], equation = equation, None
    if not isinstance(equations, (tuple, list)):
        tensors["equations"], equations = equations, ()  # type: ignore[assignment]
    declared = ((equation,) if equation is not None else ()) + tuple(equations)
    written = {str(k): str(v) for k, v in (formulas or {}).items()}
    main = next(iter(tensors), None)
    for made in declared:
        text, result = equation_formula(made), getattr(made, "result", None)
        if text is None or result is None:
            continue  # not an equation: the tracer refuses it at the yield
        if result == main:
            formula = text if formula is None else formula
        elif result in tensors:
            written.setdefault(str(result), text)
    return Stage(
        name=name,
        title=title,
        tensors=dict(tensors),
        formula=formula,
        axes=_axes(axes, tensors),
        formulas=written,
        equations=declared,
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
class Sizes:
    """The sizes of one run, known before any tensor is made: what ``Variant(cost=...)`` reads."""

    tokens: int
    d_in: int
    """The embeddings' width (0 for a variant that reads tokens alone)."""
    d_out: int
    """The projections' width (``--d-out``)."""
    options: Mapping[str, Any]
    """The variant's options, checked, defaults filled in (as ``run.options``)."""
    query: int | None = None
    """The focused query, or None for all of them."""
    source_tokens: int = 0
    d_source: int = 0


@dataclass(frozen=True)
class Cost:
    """What a run will cost, declared before it starts: ``Variant(cost=lambda s: Cost(...))``.

    The tool compares each measure with its limit (docs/reference.md, "Limits") and refuses a
    run past one in a line that names ``larger`` and ``smaller``, before any tensor is made."""

    substeps: int = 0
    """The sub-steps its longest loop makes."""
    elements: int = 0
    """The most numbers its tensors hold at once: the stages it keeps and what it computes."""
    table: int = 0
    """The numbers of its largest tensor (one step may show at most 2^28)."""
    values: int = 0
    """The numbers its sub-steps yield, all together (each one is checked and may be shown)."""
    largest: float = 0.0
    """The largest magnitude its options make a number reach (``base ** k``), or ``inf``."""
    larger: tuple[str, ...] = ()
    """Options (or ``d_out``) a larger value of which makes the run cheaper (``tile``)."""
    smaller: tuple[str, ...] = ()
    """Options (or ``d_out``) a smaller value of which makes the run cheaper (``rank``)."""


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
    params: tuple[Param, ...] = ()
    """Learnt parameters beyond the query, key and value projections (a bias table, an
    output projection): given by the inputs' ``params:`` section or drawn from the seed,
    read as ``run.params[NAME]`` (see :class:`Param`)."""
    cost: Callable[[Sizes], Cost] | None = field(default=None, compare=False)
    """What a run will cost, from its :class:`Sizes`: checked against the limits before it
    starts (None: only the limits checked while it runs)."""

    unnormalised: tuple[str, ...] = ()
    """Stages among ``stages`` whose weights need not sum to 1 (sigmoid attention's
    ``weights``, linear attention's kernel): by convention a ``weights`` stage sums to 1 along
    the keys, and a stage named here is not held to it (lessons, ``attn check``, viewers)."""

    tokenize: Callable[[str, Mapping[str, Any]], Sequence[str]] | None = field(
        default=None, compare=False
    )
    """For a variant that reads text (a model with its own tokenizer): called with the text
    (``--text``, an inputs file's ``text:``) and the checked options before the run, it returns
    the tokens' labels as the variant will split the text; ``run.text`` holds the text."""
    records: tuple[str, ...] | Callable[[], Sequence[str]] = field(default=(), compare=False)
    """Files beyond the plugin's own whose lines are recorded for each step (a library's
    code the variant runs): paths or module names (a package: its whole folder), or a
    function returning them, resolved when the run starts (see :mod:`tracer.tracing.lines`)."""

    problem: str | None = field(default=None, compare=False, repr=False)
    """Why the declaration cannot work (``"option 'k' has default 0, below its own min=1
    (topk.py:12)"``), when it was made while its plugin loads: the host then refuses this
    variant alone, and running it is a plugin failure (exit status 3)."""
    rechecks: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    """Where ``attn check`` runs a learner's passing code again, as the built-ins do: each a
    dict of option values, and of ``seed``, ``init``, ``d_out`` or ``inputs`` (an input set's
    name): ``rechecks=({"cap": 0.5},)`` catches a softcapping mistake the default ``cap=1``
    hides. The first that fails is the verdict."""
    checked_with: Variant | None = field(default=None, compare=False)
    """What ``attn check --against NAME`` compares a learner's code with, when it is not what
    this variant shows: a :class:`Variant` of its own (its ``run``, ``stages``, ``mistakes``),
    run on this variant's inputs and checked options. A variant that steps through one head of
    a real model shows that head; a learner's module computes every head, from weights handed
    over in a ``given`` stage. None: the variant itself."""

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
        broken = next(
            (
                d
                for d in (*self.options, *self.params)
                if isinstance(d, (Option, Param)) and d.problem is not None
            ),
            None,
        )
        try:
            if broken is not None:
                raise ValueError(f"{broken.problem} ({broken.declared_at})")
            self._check()
        except ValueError as exc:
            if not deferring():
                raise
            where = "" if broken is not None else f" ({self.declared_at})"
            object.__setattr__(self, "problem", f"{exc}{where}")

    def _check(self) -> None:
        if not isinstance(self.name, str) or not VARIANT_NAME.match(self.name):
            raise ValueError(
                f"variant name {self.name!r} must be lower-case letters, digits and hyphens"
            )
        if not isinstance(self.title, str):
            raise ValueError(f"title of variant {self.name!r} must be text")
        if not callable(self.run):
            raise ValueError(f"run= of variant {self.name!r} must be a generator function")
        for kind in ("stages", "loops", "optional_stages", "unnormalised"):
            names = getattr(self, kind)
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise ValueError(
                    f"{kind}= of variant {self.name!r} must be a tuple of names"
                    + (f" (write ({names!r},) for one)" if isinstance(names, str) else "")
                )
            twice = sorted({n for n in names if list(names).count(n) > 1})
            if twice and kind == "stages":  # (a loop named twice is harmless, as it always was)
                raise ValueError(f"variant {self.name!r} names stage {twice[0]!r} twice in {kind}=")
        if self.inputs is not None:
            from tracer.inputs.sets import InputSet

            if not isinstance(self.inputs, InputSet):
                raise ValueError(
                    f"inputs= of variant {self.name!r} must be an InputSet (from tracer.inputs), "
                    f"got {type(self.inputs).__name__}"
                )
        for kind, cls in (("options", Option), ("mistakes", Mistake)):
            wrong = [d for d in getattr(self, kind) if not isinstance(d, cls)]
            if wrong:
                raise ValueError(
                    f"{kind}= of variant {self.name!r} must hold {cls.__name__}(...)s, "
                    f"got {type(wrong[0]).__name__}"
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
        for kind in ("optional_stages", "unnormalised"):
            unknown = [name for name in getattr(self, kind) if name not in self.stages]
            if unknown:
                raise ValueError(
                    f"{kind} {unknown} of variant {self.name!r} are not among its stages"
                    f"{did_you_mean(unknown[0], self.stages)}"
                )
        self._check_source()
        if self.cost is not None and not callable(self.cost):
            raise ValueError(
                f"cost= of variant {self.name!r} must be a function of the run's Sizes "
                f"returning a Cost, got {type(self.cost).__name__}"
            )
        names = [option.name for option in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"variant {self.name!r} declares an option twice: {names}")
        self._check_params()
        sizes = set(PARAM_DIMS) | {o.name for o in self.options if o.type is int}
        for option in self.options:
            for kind, bound in option.sized_bounds():
                for size in dim_names(bound, option.name, "option"):
                    if size not in sizes:
                        raise ValueError(
                            f"option {option.name!r} of variant {self.name!r}: {kind}={bound!r} "
                            f"names {size!r}, which is not a size{did_you_mean(size, sizes)}; "
                            f"use {', '.join(PARAM_DIMS)} or one of the variant's int options"
                        )
        self._check_rechecks()
        if self.checked_with is not None and not isinstance(self.checked_with, Variant):
            raise ValueError(
                f"checked_with= of variant {self.name!r} must be a Variant(...), "
                f"got {type(self.checked_with).__name__}"
            )
        if self.checked_with is not None and self.checked_with.problem is not None:
            raise ValueError(f"checked_with= of variant {self.name!r}: {self.checked_with.problem}")
        clash = sorted(set(names) & RESERVED_OPTIONS)
        if clash:
            raise ValueError(
                f"option {clash[0]!r} of variant {self.name!r} is a shared trace option; "
                "read it from the RunContext instead"
            )

    def _check_params(self) -> None:
        names = [param.name for param in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"variant {self.name!r} declares a parameter twice: {names}")
        sizes = set(PARAM_DIMS) | {o.name for o in self.options if o.type is int}
        for param in self.params:
            if not isinstance(param, Param):
                raise ValueError(
                    f"params= of variant {self.name!r} must hold Param(...)s, "
                    f"got {type(param).__name__}"
                )
            for size in param.size_names():
                if size not in sizes:
                    raise ValueError(
                        f"parameter {param.name!r} of variant {self.name!r}: {size!r} is not a "
                        f"size{did_you_mean(size, sizes)}; use {', '.join(PARAM_DIMS)} or one "
                        "of the variant's int options"
                    )
                if size.startswith(("source", "d_source")) and self.source is None:
                    raise ValueError(
                        f"parameter {param.name!r} of variant {self.name!r} uses {size!r}, "
                        "which needs source='required'"
                    )

    def _check_rechecks(self) -> None:
        if not isinstance(self.rechecks, tuple):
            raise ValueError(
                f"rechecks= of variant {self.name!r} must be a tuple of dicts, "
                f"got {type(self.rechecks).__name__}"
            )
        for recheck in self.rechecks:
            if not isinstance(recheck, Mapping) or not recheck:
                raise ValueError(
                    f"each recheck of variant {self.name!r} must be a dict of option values "
                    f'(rechecks=({{"cap": 0.5}},)), got {recheck!r}'
                )
            for name, value in recheck.items():
                option = self.option(name) if isinstance(name, str) else None
                known = [o.name for o in self.options] + list(RECHECK_OPTIONS)
                if option is None and name not in RECHECK_OPTIONS:
                    raise ValueError(
                        f"recheck {dict(recheck)!r} of variant {self.name!r}: {name!r} is not one "
                        f"of its options{did_you_mean(str(name), known)}; use "
                        f"{', '.join(known)}"
                    )
                if option is None:
                    continue
                if not fits_type(value, option.type) or value is None:
                    raise ValueError(
                        f"recheck {dict(recheck)!r} of variant {self.name!r}: {value!r} is not "
                        f"{option.type.__name__}"
                    )
                if option.choices is not None and value not in option.choices:
                    raise ValueError(
                        f"recheck {dict(recheck)!r} of variant {self.name!r}: {value!r} is not "
                        f"one of {option.name!r}'s choices {option.choices!r}"
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

RECHECK_OPTIONS = ("seed", "init", "d_out", "inputs")
"""Shared trace options a variant's ``rechecks`` may change besides its own options."""

RESERVED_OPTIONS = frozenset({"inputs", "seed", "init", "d_out", "dropout", "query"})
"""Options every variant shares; a variant reads them from :class:`RunContext` fields."""
