"""The lesson format, described once: every mapping a lesson file holds and every key in it.

A :class:`Shape` is one mapping of the format (the lesson itself, ``defaults:``, each step
kind, a tensor named by a step, a quiz's answer...); its :class:`Field`\\ s are the keys it
takes, in the order messages list them. Each field says what its value is (``kind``),
whether it must be written, its allowed values, the description an editor shows, the
model attribute(s) it fills, and any old spelling still read. From these tables:

- the reader (:mod:`tracer.lessons.grammar`) takes the keys it accepts ("unknown key 'x' in
  'show' (did you mean ...?); expected ..."), the keys it requires ("'quiz' needs 'answer'")
  and the kind a plain key's value must be (text, a whole number and its minimum);
- the JSON Schema (:mod:`tracer.lessons.schema`) takes its properties, required lists and
  descriptions;
- the model (:mod:`tracer.lessons.model`) is checked against them: every attribute of a
  step's dataclass is filled by a key of its shape or named in ``unwritten``
  (tests/lessons/test_format.py), so a key added to one and not the other fails.

How a value is read (tokens to indices, a variant's own options, live values in prose)
stays the reader's; what a key is, is said here. This module imports nothing of the
project but :mod:`tracer.options` (the trace options' names), so any layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tracer.options import INITS

FieldKind = Literal[
    "text",  # a non-empty text
    "prose",  # text shown to the learner: live values ({{name}}) allowed, typed numbers linted
    "integer",  # a whole number (``minimum`` when bounded)
    "number",  # a finite number (``minimum``/``below`` when bounded)
    "choice",  # one of ``values``
    "variant",  # a variant's name
    "stage",  # a stage of the variant
    "tensor",  # one of the stage's tensors
    "query",  # a query token or index, ~ for every query
    "index",  # a token or a 0-based index
    "inputs",  # a built-in input set, a file, or inline inputs
    "options",  # the options mapping (:data:`OPTIONS`)
    "operations",  # 'then': a list of operations (:data:`OPERATIONS`)
    "focus",  # a token, or a mapping (:data:`FOCUS`)
    "cell",  # [row, column] or [index]: tokens or 0-based indices
    "pair",  # exactly [row, column]
    "tensor-ref",  # a mapping naming a tensor (:data:`REF`)
    "side",  # one side of a compare (:data:`SIDE`)
    "answer",  # a quiz's answer: a computed value, a number, a choice or choices
    "choices",  # a list of at least two different texts
    "tolerance",  # a number (absolute) or a percentage (relative)
    "hints",  # one text or a list of texts
    "points",  # a list of texts
    "plugins",  # one plugin's name or a list of them
    "defaults",  # the defaults mapping (:data:`DEFAULTS`)
    "values",  # names to computed values (:data:`ANSWER`)
    "steps",  # a list of steps (:data:`STEPS`)
]

_NO_DEFAULT = object()


@dataclass(frozen=True)
class Field:
    """One key of a :class:`Shape`."""

    name: str
    kind: FieldKind
    description: str
    """What the key means, in the words an editor shows when completing it."""
    required: bool = False
    """Must be written; the reader says so with the shape's (or this field's) ``needs``."""
    model: tuple[str, ...] | None = None
    """The model attributes its value fills (None: the attribute of its own name; (): none,
    it only steers the reading)."""
    values: tuple[str, ...] = ()
    """The allowed values, where they are a fixed set (``kind == "choice"``)."""
    old: tuple[str, ...] = ()
    """Old spellings still read as this key (with a warning that names the new one); none
    today. A required key has none (the schema could not require one spelling or the other)."""
    needs: str = ""
    """The message when a required key is missing (default: the shape's ``needs``)."""
    minimum: float | None = None
    below: float | None = None
    """An exclusive upper bound."""
    default: object = _NO_DEFAULT
    """What leaving the key out means, for the schema to show (none when it depends)."""
    examples: tuple[object, ...] = ()

    @property
    def attributes(self) -> tuple[str, ...]:
        """The model attributes this key fills."""
        return (self.name,) if self.model is None else self.model

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


@dataclass(frozen=True)
class Shape:
    """A mapping of the lesson format: the keys it takes and what model it reads into."""

    name: str
    what: str
    """How messages name it: "'show'", "the lesson"."""
    description: str
    fields: tuple[Field, ...]
    model: str | None = None
    """The :mod:`tracer.lessons.model` class it reads into (None: it steers the reading)."""
    unwritten: tuple[str, ...] = ()
    """The model's attributes no key of this shape fills (positions, a step's kind...)."""
    needs: str = "{what} needs '{key}'"
    """The message when a required key is missing."""
    short: Field | None = None
    """The value written in place of the mapping, if any: a narration's text, a
    checkpoint's bare list of points."""
    mapping: bool = True
    """False: the value is only ever the ``short`` form."""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.fields)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.fields if field.required)

    @property
    def old_spellings(self) -> dict[str, str]:
        """Old spelling -> the key it is read as."""
        return {old: field.name for field in self.fields for old in field.old}

    def field(self, name: str) -> Field:
        return next(field for field in self.fields if field.name == name)

    def missing(self, name: str, what: str = "") -> str:
        """The message for the required key ``name`` left out (of the mapping ``what``
        names: default, the shape's own name)."""
        field = self.field(name)
        return (field.needs or self.needs).format(what=what or self.what, key=name)

    def but(self, name: str, what: str, fields: tuple[Field, ...], **changes: object) -> Shape:
        """A shape with these keys, otherwise like this one (``REF`` plus a label...)."""
        from dataclasses import replace

        return replace(self, name=name, what=what, fields=fields, **changes)  # type: ignore[arg-type]


def _fields(*fields: Field) -> tuple[Field, ...]:
    return fields


def _filling(model: tuple[str, ...], fields: tuple[Field, ...], note: str = "") -> list[Field]:
    """``fields`` as keys of a step that fill its ``model`` attributes (a show's ``ref``)."""
    from dataclasses import replace

    return [replace(f, model=model, description=f.description + note) for f in fields]


# Operations ------------------------------------------------------------------

OPERATIONS: dict[str, str] = {
    "softmax": "softmax over dimension N (0 = down the columns, -1 = along each row)",
    "normalize": "divide by the sum over dimension N",
    "sum": "sum over dimension N",
    "scale": "multiply every value by the number N",
    "diagonal": "the diagonal of a square matrix (value: true)",
    "transpose": "swap rows and columns (value: true)",
    "exp": "e to the power of every value (value: true)",
    "pick": "keep one entry along the first dimension: a token or a 0-based index",
    "max": "the largest value over dimension N (no value: of the whole tensor)",
    "min": "the smallest value over dimension N (no value: of the whole tensor)",
    "mean": "the mean over dimension N (no value: of the whole tensor)",
    "std": "the standard deviation over dimension N (no value: of the whole tensor)",
    "argmax": "the 0-based index of the largest value over dimension N (no value: one row)",
    "count": "how many values are not zero over dimension N (no value: in the whole tensor)",
    "size": "how many entries dimension N has (no value: how many values the whole tensor has)",
    "abs": "the absolute value of every value (value: true)",
    "add": "add a number, or a tensor named like an answer (variant, stage, tensor...)",
    "subtract": "subtract a number, or a tensor named like an answer",
    "multiply": "multiply by a number, or by a tensor named like an answer (element-wise)",
    "divide": "divide by a number other than 0, or by a tensor named like an answer "
    "(element-wise; a 0 in it is refused)",
    "compare": "1 where the comparison holds, else 0: '> 0', '<= 0.5', '== 0', '!= 0'",
}
"""Operations a tensor may have applied (``then:``), with what each one's value means."""
FLAG_OPERATIONS = ("diagonal", "transpose", "exp", "abs")
"""Operations that take no value."""
REDUCTIONS = ("sum", "max", "min", "mean", "std", "argmax", "count", "size")
"""Operations over a dimension; all but ``sum`` also take no value (the whole tensor)."""
BINARY_OPERATIONS = ("add", "subtract", "multiply", "divide")
"""Operations with a number or a second tensor."""
COMPARISONS = (">=", "<=", "==", "!=", ">", "<")
"""The operators of ``compare`` (longest first, so '>=' is not read as '>')."""
DEFAULT_TOLERANCE = 0.01
"""A number quiz's tolerance when the lesson gives none."""


# The shapes ------------------------------------------------------------------

_VARIANT = Field(
    "variant",
    "variant",
    "the variant, as 'attn plugins' lists it (default: the one 'defaults' sets)",
    model=("variant",),
)
_STAGE = Field("stage", "stage", "a stage of the variant")
_TENSOR = Field(
    "tensor",
    "tensor",
    "one of the stage's tensors (default: every tensor of the stage in a 'show', else the first)",
)
_QUERY = Field(
    "query",
    "query",
    "focus one query token (a token or its index; ~ for every query)",
    examples=("journey", 1),
)
_INPUTS = Field(
    "inputs",
    "inputs",
    "the inputs of this step (default: the lesson's, or its 'defaults')",
    model=("options",),
)
_OPTIONS = Field(
    "options", "options", "options for the variant, over those of the lesson and its 'defaults'"
)
_THEN = Field(
    "then", "operations", "operations applied to the tensor, in order (e.g. '- softmax: 0')"
)
_CAPTION = Field("caption", "prose", "a sentence shown with the step; {{name}} shows a live value")

REF = Shape(
    "ref",
    "a tensor",
    "a tensor of a stage of a variant, optionally transformed",
    _fields(_VARIANT, _STAGE, _TENSOR, _QUERY, _INPUTS, _OPTIONS, _THEN),
    model="TensorRef",
    unwritten=("line", "column", "tensor_at", "cell", "cell_at", "cell_names", "label"),
    needs="{what} needs a '{key}'",
)
"""A tensor named by a step: the keys every kind of tensor takes (a quiz's ``show``/``cells``)."""
_REQUIRED_STAGE = Field(_STAGE.name, _STAGE.kind, _STAGE.description, required=True)
SIDE = REF.but(
    "side",
    "a side",
    (*REF.fields, Field("label", "text", "what to call this side")),
    description="one side of a compare: a tensor, over the keys the compare gives both sides",
    unwritten=("line", "column", "tensor_at", "cell", "cell_at", "cell_names"),
)
ANSWER = REF.but(
    "answer",
    "a computed value",
    (
        _VARIANT,
        _REQUIRED_STAGE,
        *REF.fields[2:],
        Field(
            "cell",
            "cell",
            "which value: [row, column], tokens or 0-based indices",
            model=("cell", "cell_at", "cell_names"),
            examples=(["journey", "Your"], [0]),
        ),
    ),
    description="a computed value: a cell of a tensor (a quiz's answer, a live value)",
    unwritten=("line", "column", "tensor_at", "label"),
)
"""A quiz's computed answer, a live value (``values:``) or a second tensor of an operation."""
SHOWN = REF.but("shown", "a shown tensor", (_VARIANT, _REQUIRED_STAGE, *REF.fields[2:]))
"""A tensor a quiz shows (``show:``, ``cells:``): a stage must be named."""

FOCUS = Shape(
    "focus",
    "focus",
    "what to highlight: a token (its row and column), a row, a column or a cell",
    _fields(
        Field("token", "index", "a token: its row and column", model=("kind", "row", "column")),
        Field("row", "index", "a row: a token or its index", model=("kind", "row")),
        Field("column", "index", "a column: a token or its index", model=("kind", "column")),
        Field("cell", "pair", "one cell: [row, column]", model=("kind", "row", "column")),
    ),
    model="Focus",
    short=Field("token", "index", "a token: its row and column", model=("kind", "row", "column")),
    unwritten=("names",),  # the tokens as written, read along the table's axes when run
)

SHOW = Shape(
    "show",
    "'show'",
    "one stage of a variant: its tensors, optionally focused",
    _fields(
        *_filling(("ref",), (_VARIANT, _REQUIRED_STAGE, *REF.fields[2:])),
        Field("focus", "focus", FOCUS.description),
        _CAPTION,
    ),
    model="Show",
    unwritten=("line", "column", "kind"),
    needs="{what} needs a '{key}'",
)
LOOP = Shape(
    "loop",
    "'loop'",
    "step through the sub-steps of a loop, one iteration at a time",
    _fields(
        _VARIANT,
        Field("stage", "stage", "a stage the variant builds with a loop", required=True),
        _QUERY,
        _INPUTS,
        _OPTIONS,
        Field(
            "limit",
            "integer",
            "show at most this many sub-steps (default: all)",
            minimum=1,
            examples=(8,),
        ),
        _CAPTION,
    ),
    model="Loop",
    unwritten=("line", "column", "kind"),
    needs="{what} needs a '{key}'",
)
COMPARE = Shape(
    "compare",
    "'compare'",
    "two tensors side by side and their difference",
    _fields(
        *(
            Field(
                f.name,
                f.kind,
                f.description + "; for both sides",
                model=("left", "right"),
                examples=f.examples,
            )
            for f in REF.fields
        ),
        Field("left", "side", "the left tensor", required=True),
        Field("right", "side", "the right tensor", required=True),
        _CAPTION,
    ),
    model="Compare",
    unwritten=("line", "column", "kind"),
)
QUIZ = Shape(
    "quiz",
    "'quiz'",
    "a question: a number, one or several choices, or cells to select",
    _fields(
        Field("id", "text", "a name for this quiz, unique in the lesson (progress is kept by it)"),
        Field("question", "prose", "the question; {{name}} shows a live value", required=True),
        Field(
            "show",
            "tensor-ref",
            "a tensor shown with the question (not the answer's own)",
            model=("shown",),
        ),
        Field(
            "answer",
            "answer",
            "a computed value (variant, stage, cell), best; a number; the text of the right "
            "choice, or a list of every right choice; for 'cells', a computed tensor whose "
            "non-zero cells are right",
            required=True,
            model=("answer", "quiz_kind"),
        ),
        Field(
            "choices",
            "choices",
            "the options shown; the answer names the right one(s)",
            model=("choices", "quiz_kind"),
        ),
        Field(
            "cells",
            "tensor-ref",
            "the tensor whose cells the learner selects",
            model=("cells", "quiz_kind"),
        ),
        Field(
            "tolerance",
            "tolerance",
            "how close a predicted number must be: absolute (0.005) or relative (1%); "
            f"default {DEFAULT_TOLERANCE}",
            model=("tolerance", "relative"),
            default=DEFAULT_TOLERANCE,
            examples=(0.005, "1%"),
        ),
        Field("hints", "hints", "hints, revealed one at a time before answering"),
        Field(
            "explanation",
            "prose",
            "revealed after answering; {{answer}} shows the computed answer",
        ),
    ),
    model="Quiz",
    unwritten=("line", "column", "kind"),
)
_POINTS = Field(
    "points",
    "points",
    "what the learner should now know, one point each",
    required=True,
    needs="'checkpoint' needs 'points', a list of what the learner should now know",
)
CHECKPOINT = Shape(
    "checkpoint",
    "'checkpoint'",
    "a recap: a title and the points the learner should now know",
    _fields(Field("title", "text", "e.g. Summary", default="Checkpoint"), _POINTS),
    model="Checkpoint",
    unwritten=("line", "column", "kind"),
    short=_POINTS,
)
NARRATION = Shape(
    "narration",
    "narration",
    "plain text, shown as written; {{name}} shows a live value",
    (),
    model="Narration",
    unwritten=("line", "column", "kind"),
    short=Field("text", "prose", "plain text, shown as written; {{name}} shows a live value"),
    mapping=False,
)
STEPS: tuple[Shape, ...] = (NARRATION, SHOW, LOOP, COMPARE, QUIZ, CHECKPOINT)
"""The step kinds, in the order messages list them."""
STEP_KINDS = tuple(shape.name for shape in STEPS)
STEP_SHAPES = {shape.name: shape for shape in STEPS}

DEFAULTS = Shape(
    "defaults",
    "'defaults'",
    "what the following steps leave out: a variant, a query, options",
    _fields(
        Field("variant", "variant", "the variant of the steps that name none"),
        _QUERY,
        Field("inputs", "inputs", "the inputs of the steps that follow"),
        Field("options", "options", "options for the steps that follow"),
    ),
)
"""What ``defaults:`` sets for the steps after it (the whole lesson, or until the next one)."""

TRACE_OPTIONS = Shape(
    "options",
    "options",
    "options for the variants: shared ones and the variants' own",
    _fields(
        Field(
            "seed",
            "integer",
            "random seed for the weights (and dropout)",
            default=123,
            examples=(123,),
        ),
        Field("init", "choice", "how the weights are drawn", values=INITS, default="rand"),
        Field("d_out", "integer", "width of q, k, v", minimum=1, default=2, examples=(2, 64)),
        Field(
            "dropout",
            "number",
            "dropout rate",
            minimum=0,
            below=1,
            default=0,
            examples=(0.5,),
        ),
        Field(
            "heads",
            "integer",
            "attention heads, for the variants that declare them",
            minimum=1,
            default=2,
            model=("heads", "values"),
        ),
    ),
    model="Options",
    unwritten=("inputs", "values", "trace_at"),
)
"""The options every lesson may write; any other name is an option a variant declares
(``heads`` is one too, which every variant may be passed: :data:`tracer.options.LEGACY`)."""

LESSON = Shape(
    "lesson",
    "the lesson",
    "A lesson script for attention-tracer: see docs/lessons.md.",
    _fields(
        Field("title", "text", "the lesson's title, as 'attn lessons' lists it", required=True),
        Field(
            "summary",
            "text",
            "one or two sentences: what the learner will see",
            required=True,
        ),
        Field(
            "plugins",
            "plugins",
            "plugins whose variants the lesson uses ('attn plugins' names them)",
            model=(),
        ),
        Field("inputs", "inputs", "the inputs every step starts from", model=("options",)),
        Field("options", "options", "options for the variants of every step"),
        Field("defaults", "defaults", DEFAULTS.description, model=()),
        Field("values", "values", "live values prose shows as {{name}}, computed when it runs"),
        Field("steps", "steps", "the steps, in order", required=True),
    ),
    model="Lesson",
    unwritten=("path", "name", "typed_numbers", "markup", "warnings"),
    needs="the lesson has no '{key}'",
)

SHAPES: tuple[Shape, ...] = (
    LESSON,
    DEFAULTS,
    TRACE_OPTIONS,
    *STEPS,
    REF,
    SIDE,
    ANSWER,
    SHOWN,
    FOCUS,
)
"""Every mapping of the format."""
SHAPES_BY_NAME = {shape.name: shape for shape in SHAPES}
