"""The learner's progress file, as the app reads it: :mod:`tracer.session.progress`.

Kept under this name so code that imported it from here keeps working; the
session owns saving progress, so the app, ``--plain --interactive`` and
``attn lessons --json`` read and write the one file the same way.
"""

from __future__ import annotations

from tracer.session.progress import (
    DATA_ENV,
    FILE_NAME,
    LessonProgress,
    ProgressStore,
    QuizAnswer,
    data_dir,
    lesson_key,
    load_settings,
    save_settings,
)

__all__ = [
    "DATA_ENV",
    "FILE_NAME",
    "LessonProgress",
    "ProgressStore",
    "QuizAnswer",
    "data_dir",
    "lesson_key",
    "load_settings",
    "save_settings",
]
