"""Lesson scripts: the YAML format, its safe loader, its JSON Schema and running lessons.

- :mod:`tracer.lessons.model`: the dataclasses a loaded lesson is made of.
- :mod:`tracer.lessons.loader`: finding lessons and loading them: ``load_lesson``,
  ``parse_lesson``, ``find_lessons``, ``LessonError``.
- :mod:`tracer.lessons.reading`: reading lesson text safely (the YAML layer).
- :mod:`tracer.lessons.format`: the lesson format, declared once: every mapping's keys.
- :mod:`tracer.lessons.grammar`: the lesson grammar, from YAML nodes to a ``Lesson``.
- :mod:`tracer.lessons.prose`: live values in prose; ``live_text`` is what every viewer shows.
- :mod:`tracer.lessons.grading`: ``grade``, the one function that grades quiz answers.
- :mod:`tracer.lessons.lesson_runner`: ``LessonRunner`` computes what each step shows (imports torch).
- :mod:`tracer.lessons.check`: ``check_lesson`` runs a lesson to find what only a run can tell.
- :mod:`tracer.text.plain_lesson`: ``plain_lines`` prints a whole lesson as text (``--plain``).
- :mod:`tracer.text.export`: the lesson as Markdown or a Jupyter notebook.
- :mod:`tracer.lessons.schema`: ``lesson_schema`` builds the JSON Schema (draft-07).

Importing this package never imports torch.
"""

from tracer.lessons.loader import LessonError, find_lessons, load_lesson, parse_lesson
from tracer.lessons.model import (
    Checkpoint,
    Compare,
    Focus,
    Lesson,
    LessonRef,
    LessonStep,
    Loop,
    Narration,
    Operation,
    Options,
    Quiz,
    Show,
    TensorRef,
)

__all__ = [
    "Checkpoint",
    "Compare",
    "Focus",
    "Lesson",
    "LessonError",
    "LessonRef",
    "LessonStep",
    "Loop",
    "Narration",
    "Operation",
    "Options",
    "Quiz",
    "Show",
    "TensorRef",
    "find_lessons",
    "load_lesson",
    "parse_lesson",
]
