"""The lesson data model: what a loaded lesson is, independent of YAML.

A :class:`Lesson` is a title, a summary, the inputs and variant options every
step starts from, and an ordered tuple of steps. Each step kind is its own
frozen dataclass; all of them carry ``line`` and ``column`` (1-based, where
the step starts in its file) so a viewer can point back at the source.

Step kinds (the YAML key that introduces each one is in brackets):

- :class:`Narration` [``narration``]: plain text, shown exactly as written (not Markdown),
  with live values (``{{name}}``) filled in; see :mod:`tracer.lessons.prose`.
- :class:`Show` [``show``]: one tensor of one stage of a variant, with an
  optional :class:`Focus` (a token, row, column or cell) and a caption.
- :class:`Loop` [``loop``]: step through a loop's sub-steps (``SubStep``),
  optionally for one query token.
- :class:`Compare` [``compare``]: two tensors side by side (two variants, or
  one variant under two option sets) and their difference.
- :class:`Quiz` [``quiz``]: predict a number (``kind == "number"``, answer
  within ``tolerance``, absolute or relative), choose one of ``choices``
  (``kind == "choice"``), choose every right one (``kind == "multiple"``), or
  select the cells of a shown tensor (``kind == "cells"``); ``hints`` are
  revealed one at a time and ``explanation`` after answering. A number quiz's
  answer is either a literal or, preferably, a :class:`TensorRef` naming a
  cell that is computed live, so it can never drift from the code. Grading
  is :func:`tracer.lessons.grading.grade`.
- :class:`Checkpoint` [``checkpoint``]: a recap: a title and bullet points.

A :class:`TensorRef` names a tensor: variant, stage, optional tensor name
(None: a ``show`` step displays every tensor of the stage, the first one
focused; elsewhere it means the first tensor), optional query, option overrides, and
optional :class:`Operation`\\ s applied afterwards (``softmax`` over a
dimension, ``diagonal``, ...), which is how a lesson shows what a *mistake*
would compute without hard-coding its numbers. Evaluating refs is
:mod:`tracer.lessons.lesson_runner`'s job; this module never imports torch.

Every step kind answers the same three questions, so no module needs to tell the
kinds apart to read them: ``prose()`` (every text the author wrote for it, as
written), ``tables()`` (the tensors it shows with that prose, in order) and
``reported_at`` (the tensor a failure of the step is reported at, if any). The
views (:mod:`tracer.lessons.views`) show them; ``attn lesson check`` checks them.

Which key of a lesson file fills which attribute is declared in the format's table
(:mod:`tracer.lessons.format`); a test checks every attribute here is filled by a key there
or named as unwritten (a position, a step's kind).

Indices in focuses and cells are 0-based, as in the code; a token may stand
in for an index wherever one is expected (``cell: [journey, Your]``). The
loader resolves tokens, so every index here is an ``int``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tracer.inputs import InputSet
from tracer.lessons.format import OPERATIONS as OPERATIONS  # the format's table, named here too
from tracer.lessons.format import STEP_KINDS as STEP_KINDS
from tracer.yamldoc import Problem

FocusKind = Literal["token", "row", "column", "cell"]
QuizKind = Literal["number", "choice", "multiple", "cells"]


@dataclass(frozen=True)
class OptionValue:
    """One of a variant's own declared options (``window: 3``), where it was written.

    As read, ``value`` is what the author typed; in a :class:`TensorRef` or a
    :class:`Loop` it has been checked against the step's variant and converted.
    """

    name: str
    value: object
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class Options:
    """Variant options; None means "inherit" (from the lesson, then the defaults)."""

    inputs: InputSet | None = None
    seed: int | None = None
    init: str | None = None
    d_out: int | None = None
    dropout: float | None = None
    heads: int | None = None
    """Attention heads (None: the variant's default). The old spelling, kept so code that
    builds or reads ``Options(heads=...)`` keeps working: ``heads`` is an ordinary variant
    option, held in ``values`` like ``window``, and this field always agrees with it."""
    values: tuple[OptionValue, ...] = ()
    """Options the variant declares (``window``, ``heads``...), by name; later entries win."""
    trace_at: tuple[OptionValue, ...] = field(default=(), compare=False)
    """Where the trace options in effect (``seed``, ``init``, ``d_out``, ``dropout``) were
    written, as read from a lesson: a problem with one is reported at its value."""

    def __post_init__(self) -> None:
        written = [value for value in self.values if value.name == "heads"]
        if written:  # the values are the truth; the field follows them
            object.__setattr__(self, "heads", written[-1].value)
        elif self.heads is not None:  # built the old way: Options(heads=2)
            object.__setattr__(self, "values", (*self.values, OptionValue("heads", self.heads)))

    def variant_options(self) -> dict[str, object]:
        """The variant's own options by name (``heads`` included when set)."""
        return {value.name: value.value for value in self.values}

    def over(self, base: Options) -> Options:
        """These options, with anything unset taken from ``base``."""
        mine = {value.name for value in self.values}
        return Options(
            inputs=self.inputs if self.inputs is not None else base.inputs,
            seed=self.seed if self.seed is not None else base.seed,
            init=self.init if self.init is not None else base.init,
            d_out=self.d_out if self.d_out is not None else base.d_out,
            dropout=self.dropout if self.dropout is not None else base.dropout,
            values=tuple(v for v in base.values if v.name not in mine) + self.values,
            trace_at=self.trace_at
            + tuple(v for v in base.trace_at if v.name not in {w.name for w in self.trace_at}),
        )


@dataclass(frozen=True)
class Operation:
    """One step applied to a tensor after it is computed, e.g. ``softmax`` over ``0``."""

    name: str
    argument: float | int | bool | str | TensorRef
    """A dimension, a number, a token index, ``True`` for no value, a comparison
    (``'> 0'``) or a second tensor (add, subtract, multiply, divide)."""
    line: int = 0
    column: int = 0
    token: str = field(default="", compare=False)
    """A ``pick`` written as a token ("cat"): the token as written, so that on a key or source
    axis a token of both sequences of a cross-attention run is read as the source's
    (:meth:`~tracer.lessons.lesson_runner.LessonRunner.tensor`)."""


@dataclass(frozen=True)
class TensorRef:
    """A tensor of a stage of a variant, under given options, optionally transformed.

    ``options`` are already merged with the lesson's (and, for compare sides,
    the compare step's) options; ``query`` is a resolved 0-based token index.
    ``cell``, when set, picks one value (a quiz answer).
    """

    variant: str
    stage: str
    tensor: str | None = None
    query: int | None = None
    options: Options = field(default_factory=Options)
    then: tuple[Operation, ...] = ()
    cell: tuple[int, ...] | None = None
    label: str | None = None
    line: int = 0
    column: int = 0
    cell_at: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    """Where each index of ``cell`` is written (line, column), for a message about one."""
    tensor_at: tuple[int, int] | None = field(default=None, compare=False)
    """Where ``tensor`` is written (line, column), for a message about it."""
    cell_names: tuple[str, ...] = field(default=(), compare=False)
    """Each index of ``cell`` as written: a token's name, or "" for a number. A token in both
    sequences of a cross-attention run is read on a key or source axis as the source's
    (:meth:`tracer.lessons.lesson_runner.LessonRunner.cell_of`)."""


@dataclass(frozen=True)
class Focus:
    """What to highlight: a token's row and column, a row, a column, or one cell."""

    kind: FocusKind
    row: int | None = None
    column: int | None = None
    names: tuple[str, str] = field(default=("", ""), compare=False)
    """The row's and the column's token as written ("" for an index), so that on a key or
    source axis a token of both sequences is read as the source's
    (:meth:`~tracer.lessons.lesson_runner.LessonRunner.focus_of`)."""


@dataclass(frozen=True)
class Narration:
    text: str
    line: int = 0
    column: int = 0
    kind: Literal["narration"] = "narration"

    def prose(self) -> tuple[str, ...]:
        return (self.text,)

    def tables(self) -> tuple[TensorRef, ...]:
        return ()

    @property
    def reported_at(self) -> TensorRef | None:
        return None


@dataclass(frozen=True)
class Show:
    ref: TensorRef
    focus: Focus | None = None
    caption: str = ""
    line: int = 0
    column: int = 0
    kind: Literal["show"] = "show"

    def prose(self) -> tuple[str, ...]:
        return (self.caption,)

    def tables(self) -> tuple[TensorRef, ...]:
        return (self.ref,)

    @property
    def reported_at(self) -> TensorRef | None:
        return self.ref


@dataclass(frozen=True)
class Loop:
    """Step through the sub-steps that build ``stage`` (a stage the variant lists in ``loops``).

    ``limit`` caps how many sub-steps are shown (None: all of them).
    """

    variant: str
    stage: str
    query: int | None = None
    options: Options = field(default_factory=Options)
    limit: int | None = None
    caption: str = ""
    line: int = 0
    column: int = 0
    kind: Literal["loop"] = "loop"

    def prose(self) -> tuple[str, ...]:
        return (self.caption,)

    def tables(self) -> tuple[TensorRef, ...]:
        return ()

    @property
    def reported_at(self) -> TensorRef | None:
        return None


@dataclass(frozen=True)
class Compare:
    """Two tensors and, when their shapes agree, ``right - left``."""

    left: TensorRef
    right: TensorRef
    caption: str = ""
    line: int = 0
    column: int = 0
    kind: Literal["compare"] = "compare"

    def prose(self) -> tuple[str, ...]:
        return (self.caption,)

    def tables(self) -> tuple[TensorRef, ...]:
        return (self.left, self.right)

    @property
    def reported_at(self) -> TensorRef | None:
        return None


@dataclass(frozen=True)
class Quiz:
    """A question, graded by :func:`tracer.lessons.grading.grade`.

    number: ``answer`` is a float or a :class:`TensorRef` with a ``cell``;
    a response within ``tolerance`` of it is right (``relative``: within
    ``tolerance`` times the answer's size).
    choice: ``choices`` are the options shown; ``answer`` is the index of the
    right one, or a :class:`TensorRef` whose value is a token index (the right
    choice is that token).
    multiple: ``answer`` is the tuple of the indices of every right choice.
    cells: ``cells`` names the tensor whose cells the learner selects;
    ``answer`` is a :class:`TensorRef` of the same shape whose non-zero cells
    are the right selection.
    """

    question: str
    quiz_kind: QuizKind
    answer: float | int | TensorRef | tuple[int, ...]
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0
    explanation: str = ""
    id: str | None = None
    line: int = 0
    column: int = 0
    kind: Literal["quiz"] = "quiz"
    hints: tuple[str, ...] = ()
    """Shown one at a time, on request, before answering."""
    relative: bool = False
    """``tolerance`` is a fraction of the answer (written ``1%``)."""
    cells: TensorRef | None = None
    """For ``cells`` quizzes: the tensor shown, whose cells are selected."""
    shown: TensorRef | None = None
    """A tensor the author shows with the question (``show:``), e.g. the inputs to work from."""

    @property
    def about(self) -> TensorRef | None:
        """The tensor to keep on screen with the question: the one whose cells are selected,
        or the one the author shows. Never the answer's own tensor, which would give it away."""
        return self.cells if self.cells is not None else self.shown

    def prose(self) -> tuple[str, ...]:
        return (self.question, self.explanation, *self.hints, *self.choices)

    def tables(self) -> tuple[TensorRef, ...]:
        """The author's ``show:`` table, then the ``cells:`` to select (the walk may add the
        table of the show step before a quiz that has neither)."""
        return tuple(ref for ref in (self.shown, self.cells) if ref is not None)

    @property
    def reported_at(self) -> TensorRef | None:
        return self.answer if isinstance(self.answer, TensorRef) else None


@dataclass(frozen=True)
class Checkpoint:
    title: str = "Checkpoint"
    points: tuple[str, ...] = ()
    line: int = 0
    column: int = 0
    kind: Literal["checkpoint"] = "checkpoint"

    def prose(self) -> tuple[str, ...]:
        return self.points

    def tables(self) -> tuple[TensorRef, ...]:
        return ()

    @property
    def reported_at(self) -> TensorRef | None:
        return None


@dataclass(frozen=True)
class TypedNumber:
    """A number with three or more decimals typed into prose: it goes stale when the lesson's
    inputs or options change, so ``attn lesson check`` asks for a live value instead."""

    text: str
    where: str
    """Which prose it is in: narration, caption, question..."""
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class Markup:
    """Markdown markup written into prose (``**bold**``, ``## heading``): prose is plain text,
    so every front end would show the asterisks; ``attn lesson check`` warns about it."""

    text: str
    kind: str
    """What the markup is: bold, a heading, a link, italics."""
    where: str
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class NamedValue:
    """A live value (``values:`` in a lesson): one number, computed from a run."""

    name: str
    ref: TensorRef
    line: int = 0
    column: int = 0


LessonStep = Narration | Show | Loop | Compare | Quiz | Checkpoint


@dataclass(frozen=True)
class Lesson:
    """A loaded, validated lesson. ``options.inputs`` is always set (default: your-journey)."""

    title: str
    summary: str
    options: Options
    steps: tuple[LessonStep, ...]
    path: Path | None = None
    name: str = ""
    values: tuple[NamedValue, ...] = ()
    """Live values prose may embed as ``{{name}}``, computed when the lesson runs."""

    typed_numbers: tuple[TypedNumber, ...] = ()
    markup: tuple[Markup, ...] = ()
    """Markdown markup in prose, which ``attn lesson check`` warns about (it is shown as written)."""
    warnings: tuple[Problem, ...] = ()
    """What the lesson may not mean but loads with (a token that occurs twice, named bare);
    ``attn lesson check`` reports them, as it reports markup."""

    def value(self, name: str) -> NamedValue | None:
        return next((value for value in self.values if value.name == name), None)

    @property
    def inputs(self) -> InputSet:
        assert self.options.inputs is not None
        return self.options.inputs

    @property
    def quizzes(self) -> tuple[Quiz, ...]:
        return tuple(step for step in self.steps if isinstance(step, Quiz))


@dataclass(frozen=True)
class LessonRef:
    """One entry of ``attn lessons``: numbered from 1, shipped lessons first."""

    number: int
    name: str
    """The file name without ``.yaml``, e.g. ``01_dot_products``."""
    title: str
    path: Path
    origin: str
    """``built-in`` or the folder it was found in."""
    problem: str | None = None
    """Why the lesson cannot be loaded (its first problem), or None."""
