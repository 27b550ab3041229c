"""The lesson picker as text: each lesson with its progress, and how to open one."""

from __future__ import annotations

import sys

from tracer.errors import EXIT_OK


def plain_picker(lesson_dirs: list[str]) -> int:
    """The picker as text: each lesson with its progress, and how to open one."""
    from tracer.lessons.loader import find_lessons, shipped_dir
    from tracer.session.progress import ProgressStore, lesson_key, progress_text

    refs = find_lessons(lesson_dirs)
    store = ProgressStore()
    if store.warning:
        print(f"attn: warning: {store.warning}", file=sys.stderr)
    shipped = shipped_dir()
    width = max((len(ref.title or ref.name) for ref in refs), default=0)
    print("Lessons:")
    for ref in refs:
        if ref.problem:
            status = f"cannot be opened: {ref.problem}"
        else:
            status = progress_text(store.get(lesson_key(ref.path, shipped)))
        origin = "" if ref.origin == "built-in" else f"  ({ref.origin})"
        print(f"{ref.number:>3}. {(ref.title or ref.name).ljust(width)}  {status}{origin}")
    if not refs:
        print("  No lessons found.")
        return EXIT_OK
    last = store.last()
    resume = next(
        (r for r in refs if last is not None and lesson_key(r.path, shipped) == last[0]), None
    )
    print()
    if resume is not None and last is not None:
        print(f"You stopped in lesson {resume.number} at {progress_text(last[1])}.")
    print("Open a lesson as text: attn lesson NUMBER (or attn lesson run NUMBER --plain)")
    return EXIT_OK
