"""The lesson grammar: from a YAML node tree to a :class:`~tracer.lessons.model.Lesson`.

:class:`Reader` walks the tree once, checking every key (with "did you
mean"), every name against the plugins in its host, and every value, and
resolves what the file refers to: tokens to indices, a step's variant and
query from the ``defaults`` in force, the variant's own options (checked
against what it declares), live values in prose. It collects every problem
with its position instead of stopping at the first; nothing is computed here.

Which keys each mapping takes, which it requires and what they mean is
declared once, in :mod:`tracer.lessons.format`; the JSON Schema
(:mod:`tracer.lessons.schema`) is made from the same tables. The reader is
one class assembled from a part per step kind:

- :mod:`~tracer.lessons.grammar.base`: the reader's state, problems, and plain values
  (text, prose, numbers, token indices, mappings and their keys);
- :mod:`~tracer.lessons.grammar.option_values`: ``inputs:`` and ``options:``;
- :mod:`~tracer.lessons.grammar.refs`: naming a tensor (variant, stage, ..., ``then:``);
- :mod:`~tracer.lessons.grammar.show`, :mod:`~tracer.lessons.grammar.loop`,
  :mod:`~tracer.lessons.grammar.compare_step`, :mod:`~tracer.lessons.grammar.quiz`,
  :mod:`~tracer.lessons.grammar.checkpoint`: one step kind each;
- :mod:`~tracer.lessons.grammar.lesson_reader`: the lesson, ``defaults:``, ``values:`` and the
  steps (:class:`Reader`);
- :mod:`~tracer.lessons.grammar.nodes`: YAML nodes as plain values, and message helpers.

Every name this module had when it was one file is still importable from it.
"""

from __future__ import annotations

from tracer.errors import TracerError, UsageError
from tracer.inputs import InputSet, parse_input_node
from tracer.lessons.format import (
    BINARY_OPERATIONS,
    COMPARISONS,
    DEFAULT_TOLERANCE,
    FLAG_OPERATIONS,
    OPERATIONS,
    REDUCTIONS,
    STEP_KINDS,
)
from tracer.lessons.grammar.base import _T, ReaderBase, _Scope
from tracer.lessons.grammar.keys import (
    ANSWER_KEYS,
    CHECKPOINT_KEYS,
    COMPARE_KEYS,
    DEFAULT_KEYS,
    FOCUS_KEYS,
    LESSON_KEYS,
    LOOP_KEYS,
    OPTION_KEYS,
    PROSE_FIELDS,
    QUIZ_KEYS,
    REF_KEYS,
    SHOW_KEYS,
    SIDE_KEYS,
    STEP_KEYS,
    TRACE_KEYS,
)
from tracer.lessons.grammar.lesson_reader import Reader
from tracer.lessons.grammar.nodes import (
    _BOOL,
    _FLOAT,
    _INT,
    _NULL,
    _POSITIONED,
    _STR,
    _at,
    _closest,
    _comparison,
    _is_defaults,
    _is_null,
    _keys,
    _kind,
    _listing,
    _quoted,
    _rejoined_sentences,
    _scalar,
    _short_text,
    _tokens,
)
from tracer.lessons.model import (
    Checkpoint,
    Compare,
    Focus,
    Lesson,
    LessonStep,
    Loop,
    Markup,
    NamedValue,
    Narration,
    Operation,
    Options,
    OptionValue,
    Quiz,
    QuizKind,
    Show,
    TensorRef,
    TypedNumber,
)
from tracer.lessons.prose import (
    ANSWER,
    VALUE_NAME,
    format_problem,
    markup,
    placeholders,
    typed_numbers,
)
from tracer.lessons.reading import line_column
from tracer.options import LEGACY_OPTIONS
from tracer.suggest import did_you_mean
from tracer.variant import Tokens, source_tokens
from tracer.yamldoc import Problem

__all__ = [
    "ANSWER",
    "ANSWER_KEYS",
    "BINARY_OPERATIONS",
    "CHECKPOINT_KEYS",
    "COMPARE_KEYS",
    "COMPARISONS",
    "DEFAULT_KEYS",
    "DEFAULT_TOLERANCE",
    "FLAG_OPERATIONS",
    "FOCUS_KEYS",
    "LEGACY_OPTIONS",
    "LESSON_KEYS",
    "LOOP_KEYS",
    "OPERATIONS",
    "OPTION_KEYS",
    "PROSE_FIELDS",
    "QUIZ_KEYS",
    "REDUCTIONS",
    "REF_KEYS",
    "SHOW_KEYS",
    "SIDE_KEYS",
    "STEP_KEYS",
    "STEP_KINDS",
    "TRACE_KEYS",
    "VALUE_NAME",
    "_BOOL",
    "_FLOAT",
    "_INT",
    "_NULL",
    "_POSITIONED",
    "_STR",
    "_T",
    "Checkpoint",
    "Compare",
    "Focus",
    "InputSet",
    "Lesson",
    "LessonStep",
    "Loop",
    "Markup",
    "NamedValue",
    "Narration",
    "Operation",
    "OptionValue",
    "Options",
    "Problem",
    "Quiz",
    "QuizKind",
    "Reader",
    "ReaderBase",
    "Show",
    "TensorRef",
    "Tokens",
    "TracerError",
    "TypedNumber",
    "UsageError",
    "_Scope",
    "_at",
    "_closest",
    "_comparison",
    "_is_defaults",
    "_is_null",
    "_keys",
    "_kind",
    "_listing",
    "_quoted",
    "_rejoined_sentences",
    "_scalar",
    "_short_text",
    "_tokens",
    "did_you_mean",
    "format_problem",
    "line_column",
    "markup",
    "parse_input_node",
    "placeholders",
    "source_tokens",
    "typed_numbers",
]
