"""The lesson data model: what a loaded lesson is, independent of YAML.

A :class:`Lesson` is a title, a summary, the inputs and variant options every
step starts from, and an ordered tuple of steps. Each step kind is its own
frozen dataclass; all of them carry ``line`` and ``column`` (1-based, where
the step starts in its file) so a viewer can point back at the source.

Step kinds (the YAML key that introduces each one is in brackets):

- :class:`Narration` [``narration``]: Markdown text, shown literally.
- :class:`Show` [``show``]: one tensor of one stage of a variant, with an
  optional :class:`Focus` (a token, row, column or cell) and a caption.
- :class:`Loop` [``loop``]: step through a loop's sub-steps (``SubStep``),
  optionally for one query token.
- :class:`Compare` [``compare``]: two tensors side by side (two variants, or
  one variant under two option sets) and their difference.
- :class:`Quiz` [``quiz``]: predict a number (``kind == "number"``, answer
  within ``tolerance``) or choose one of ``choices`` (``kind == "choice"``);
  ``explanation`` is revealed after answering. A number quiz's answer is
  either a literal or, preferably, a :class:`TensorRef` naming a cell that
  is computed live, so it can never drift from the code.
- :class:`Checkpoint` [``checkpoint``]: a recap: a title and bullet points.

A :class:`TensorRef` names a tensor: variant, stage, optional tensor name
(None: a ``show`` step displays every tensor of the stage, the first one
focused; elsewhere it means the first tensor), optional query, option overrides, and
optional :class:`Operation`\\ s applied afterwards (``softmax`` over a
dimension, ``diagonal``, ...), which is how a lesson shows what a *mistake*
would compute without hard-coding its numbers. Evaluating refs is
:mod:`tracer.lessons.runner`'s job; this module never imports torch.

Indices in focuses and cells are 0-based, as in the code; a token may stand
in for an index wherever one is expected (``cell: [journey, Your]``). The
loader resolves tokens, so every index here is an ``int``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tracer.inputs import InputSet

FocusKind = Literal["token", "row", "column", "cell"]
QuizKind = Literal["number", "choice"]

OPERATIONS: dict[str, str] = {
    "softmax": "softmax over dimension N (0 = down the columns, -1 = along each row)",
    "normalize": "divide by the sum over dimension N",
    "sum": "sum over dimension N",
    "scale": "multiply every value by the number N",
    "diagonal": "the diagonal of a square matrix (value: true)",
    "transpose": "swap rows and columns (value: true)",
    "exp": "e to the power of every value (value: true)",
    "pick": "keep one entry along the first dimension: a token or a 0-based index",
}
"""Operations a :class:`TensorRef` may apply, with what each one's value means."""


@dataclass(frozen=True)
class Options:
    """Variant options; None means "inherit" (from the lesson, then the defaults)."""

    inputs: InputSet | None = None
    seed: int | None = None
    init: str | None = None
    d_out: int | None = None
    dropout: float | None = None
    heads: int | None = None
    """Attention heads, for the multi-head variants (None: the variant's default)."""

    def over(self, base: Options) -> Options:
        """These options, with anything unset taken from ``base``."""
        return Options(
            inputs=self.inputs if self.inputs is not None else base.inputs,
            seed=self.seed if self.seed is not None else base.seed,
            init=self.init if self.init is not None else base.init,
            d_out=self.d_out if self.d_out is not None else base.d_out,
            dropout=self.dropout if self.dropout is not None else base.dropout,
            heads=self.heads if self.heads is not None else base.heads,
        )


@dataclass(frozen=True)
class Operation:
    """One step applied to a tensor after it is computed, e.g. ``softmax`` over ``0``."""

    name: str
    argument: float | int | bool


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


@dataclass(frozen=True)
class Focus:
    """What to highlight: a token's row and column, a row, a column, or one cell."""

    kind: FocusKind
    row: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class Narration:
    text: str
    line: int = 0
    column: int = 0
    kind: Literal["narration"] = "narration"


@dataclass(frozen=True)
class Show:
    ref: TensorRef
    focus: Focus | None = None
    caption: str = ""
    line: int = 0
    column: int = 0
    kind: Literal["show"] = "show"


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


@dataclass(frozen=True)
class Compare:
    """Two tensors and, when their shapes agree, ``right - left``."""

    left: TensorRef
    right: TensorRef
    caption: str = ""
    line: int = 0
    column: int = 0
    kind: Literal["compare"] = "compare"


@dataclass(frozen=True)
class Quiz:
    """A question with an answer checked by :func:`tracer.lessons.runner.LessonRunner.check`.

    number: ``answer`` is a float or a :class:`TensorRef` with a ``cell``;
    a response within ``tolerance`` of it is right.
    choice: ``choices`` are the options shown; ``answer`` is the index of the right one.
    """

    question: str
    quiz_kind: QuizKind
    answer: float | int | TensorRef
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0
    explanation: str = ""
    id: str | None = None
    line: int = 0
    column: int = 0
    kind: Literal["quiz"] = "quiz"


@dataclass(frozen=True)
class Checkpoint:
    title: str = "Checkpoint"
    points: tuple[str, ...] = ()
    line: int = 0
    column: int = 0
    kind: Literal["checkpoint"] = "checkpoint"


LessonStep = Narration | Show | Loop | Compare | Quiz | Checkpoint
STEP_KINDS = ("narration", "show", "loop", "compare", "quiz", "checkpoint")


@dataclass(frozen=True)
class Lesson:
    """A loaded, validated lesson. ``options.inputs`` is always set (default: your-journey)."""

    title: str
    summary: str
    options: Options
    steps: tuple[LessonStep, ...]
    path: Path | None = None
    name: str = ""

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
