"""The keys the reader accepts, by mapping: names kept for code that imports them, each made
from the format's table (:mod:`tracer.lessons.format`), the one place a key is declared."""

from __future__ import annotations

from tracer.lessons.format import (
    ANSWER,
    CHECKPOINT,
    COMPARE,
    DEFAULTS,
    FOCUS,
    LESSON,
    LOOP,
    QUIZ,
    REF,
    SHOW,
    SIDE,
    STEPS,
    TRACE_OPTIONS,
)

LESSON_KEYS = LESSON.keys
OPTION_KEYS = TRACE_OPTIONS.keys
"""The option names a lesson may always write: the trace options, and ``heads``, which every
variant may be passed (:data:`tracer.options.LEGACY_OPTIONS`); others are declared by variants."""
TRACE_KEYS = tuple(name for name in OPTION_KEYS if name != "heads")
"""The trace options, read into :class:`~tracer.lessons.model.Options`' own fields."""
DEFAULT_KEYS = DEFAULTS.keys
"""What ``defaults:`` sets for the steps after it (the whole lesson, or until the next one)."""
REF_KEYS = REF.keys
SHOW_KEYS = SHOW.keys
LOOP_KEYS = LOOP.keys
SIDE_KEYS = SIDE.keys
COMPARE_KEYS = COMPARE.keys
ANSWER_KEYS = ANSWER.keys
QUIZ_KEYS = QUIZ.keys
CHECKPOINT_KEYS = CHECKPOINT.keys
FOCUS_KEYS = FOCUS.keys
STEP_KEYS: dict[str, tuple[str, ...]] = {shape.name: shape.keys for shape in STEPS if shape.mapping}
PROSE_FIELDS = (
    "narration",
    "caption",
    "question",
    "explanation",
    "a hint",
    "a choice",
    "a checkpoint point",
)
"""Where text is shown to the learner, so live values may appear and typed numbers are linted."""


def the(what: str) -> str:
    """``what`` with its article, for a message: "the narration", "a hint" (never "the a hint")."""
    return what if what.startswith(("a ", "an ")) else f"the {what}"
