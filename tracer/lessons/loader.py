"""Loading lessons: find them, read them safely, and report every problem at once.

Public API::

    from tracer.lessons.loader import LessonError, find_lessons, load_lesson, parse_lesson

    lesson = load_lesson("01_dot_products", host)      # a name, a number ("1") or a path
    refs = find_lessons(["my-lessons/"])               # shipped first, then extra folders

- :func:`load_lesson` raises :class:`LessonError` (exit status 1) carrying every
  :class:`~tracer.yamldoc.Problem` (``path:line:column: message``) when the file
  has problems, and :class:`~tracer.errors.UsageError` (exit status 2) when the
  name or path does not lead to a file at all.
- :func:`parse_lesson` does the same for text already in memory.
- :func:`find_lessons` lists shipped lessons and those in ``extra_dirs`` and
  ``ATTN_LESSONS_DIR`` (``os.pathsep``-separated), numbered from 1.

Loading is static: the text is read by :mod:`tracer.lessons.reading` (through
:mod:`tracer.yamldoc`: no Python objects, no tags, anchors or duplicate keys),
then :mod:`tracer.lessons.grammar` checks every key (with "did you mean") and
every variant, stage and option against the plugins in ``host``. Nothing is
computed here and torch is not imported by this module;
:func:`tracer.lessons.check.check_lesson` runs the lesson to check what only a
run can tell (tensor names, index ranges, live values, quiz answers). A
:class:`LessonError` carries, in ``partial``, the steps that could be read, so
``attn lesson check`` can run those too and report every problem at once.
"""

from __future__ import annotations

import importlib.resources
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tracer.errors import UsageError
from tracer.lessons.grammar import (  # re-exported; the keys are the format's (format.py)
    ANSWER_KEYS,
    BINARY_OPERATIONS,
    CHECKPOINT_KEYS,
    COMPARE_KEYS,
    DEFAULT_KEYS,
    DEFAULT_TOLERANCE,
    FLAG_OPERATIONS,
    LESSON_KEYS,
    LOOP_KEYS,
    OPTION_KEYS,
    QUIZ_KEYS,
    REDUCTIONS,
    REF_KEYS,
    SHOW_KEYS,
    SIDE_KEYS,
    Reader,
)
from tracer.lessons.model import Lesson, LessonRef, LessonStep
from tracer.lessons.reading import (
    MAX_BYTES,
    LessonError,
    compose_file,
    compose_text,
    one_line,
    tidy,
)
from tracer.suggest import did_you_mean
from tracer.yamldoc import DocumentError, Problem

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost

LESSON_SUFFIXES = (".yaml", ".yml")
ENV_DIRS = "ATTN_LESSONS_DIR"


# Finding lessons -------------------------------------------------------------


def shipped_dir() -> Path:
    """The folder of the lessons that ship with the package."""
    return Path(str(importlib.resources.files("tracer.builtin_lessons")))


def lesson_dirs(extra_dirs: Sequence[str | Path] = (), *, use_env: bool = True) -> list[Path]:
    """``extra_dirs`` then ``ATTN_LESSONS_DIR``; a folder that does not exist is a UsageError."""
    folders = [Path(d) for d in extra_dirs]
    if use_env:
        folders += [Path(d) for d in os.environ.get(ENV_DIRS, "").split(os.pathsep) if d]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"lessons folder not found: {folder}")
    return folders


def find_lessons(extra_dirs: Sequence[str | Path] = (), *, use_env: bool = True) -> list[LessonRef]:
    """Shipped lessons, then each extra folder's, sorted by file name and numbered from 1.

    Titles are read without checking the whole lesson; a file that cannot be
    read still appears, with its first problem in ``problem``.
    """
    found = [(path, head, "built-in") for path, head in _lesson_heads(shipped_dir())]
    for folder in lesson_dirs(extra_dirs, use_env=use_env):
        found += [(path, head, str(folder)) for path, head in _lesson_heads(folder)]
    refs = []
    for number, (path, head, origin) in enumerate(found, start=1):
        title, problem = _peek_title(path, head)
        refs.append(LessonRef(number, path.stem, title, path, origin, problem))
    return refs


_Head = yaml.Node | None | LessonError | DocumentError | UsageError
"""A file's node tree, or why it could not be read."""


def _lesson_heads(folder: Path) -> list[tuple[Path, _Head]]:
    """The lessons in ``folder`` as :func:`lesson_files_in` finds them, each with its node
    tree (or the error reading it): each file is read and parsed once, for both the inputs
    check and the title (a name given to ``attn lesson run`` reads every file)."""
    found = []
    for path in sorted(p for p in folder.iterdir() if p.suffix in LESSON_SUFFIXES and p.is_file()):
        head = _compose_or_error(path)
        if not _holds_inputs(head):
            found.append((path, head))
    return found


def _compose_or_error(path: Path) -> _Head:
    try:
        return compose_file(path)
    except (DocumentError, LessonError, UsageError) as exc:
        return exc


def lesson_files_in(folder: Path) -> list[Path]:
    """The lessons in ``folder``, sorted: its ``.yaml`` files, less the inputs files that
    lessons beside them name (``inputs: data.yaml``), which are not lessons."""
    return [path for path, _ in _lesson_heads(folder)]


def is_inputs_file(path: Path) -> bool:
    """Whether ``path`` holds an input set (tokens, embeddings...) rather than a lesson.

    Only a readable mapping with ``tokens`` and none of a lesson's keys counts; anything
    else is treated as a lesson, so its problems are reported."""
    return _holds_inputs(_compose_or_error(path))


def _holds_inputs(root: _Head) -> bool:
    # Not YAML (an error): a lesson, with its problems.
    if not isinstance(root, yaml.MappingNode):
        return False
    keys = {str(key.value) for key, _ in root.value if isinstance(key, yaml.ScalarNode)}
    return "tokens" in keys and not keys & {"title", "summary", "steps", "values", "defaults"}


def _peek_title(path: Path, root: _Head) -> tuple[str, str | None]:
    if isinstance(root, (DocumentError, LessonError, UsageError)):
        problems = getattr(root, "problems", None)
        return "", str(problems[0]) if problems else str(root)
    if not isinstance(root, yaml.MappingNode):
        return "", f"{path}:1:1: a lesson must be a mapping with title, summary and steps"
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            is_title = isinstance(key, yaml.ScalarNode) and key.value == "title"
            if is_title and isinstance(value, yaml.ScalarNode) and value.value:
                return str(value.value), None
    return "", f"{path}: the lesson has no 'title'"


def resolve_lesson(spec: str | Path, extra_dirs: Sequence[str | Path] = ()) -> Path:
    """The file a lesson name, number or path refers to; UsageError if there is none.

    A name matches a file name with or without ``.yaml`` and with or without
    its number prefix (``01_dot_products``, ``dot_products``, ``1``).
    """
    text = str(spec)
    path = Path(spec)
    if path.suffix in LESSON_SUFFIXES or os.sep in text or "/" in text or path.exists():
        if path.is_dir():
            raise UsageError(f"{path} is a folder; give a lesson file (.yaml)")
        if not path.exists():
            raise UsageError(f"lesson file not found: {path}")
        return path
    refs = find_lessons(extra_dirs)
    for ref in refs:
        bare = ref.name.split("_", 1)[1] if "_" in ref.name else ref.name
        if text in (ref.name, bare, bare.replace("_", "-"), str(ref.number)):
            return ref.path
        if text.isdigit() and ref.name.split("_", 1)[0].lstrip("0") == text.lstrip("0"):
            return ref.path
    names = [ref.name for ref in refs]
    hint = did_you_mean(text, names + [n.split("_", 1)[-1] for n in names])
    raise UsageError(f"unknown lesson '{text}'{hint}; see 'attn lessons' for the list")


# Loading ---------------------------------------------------------------------


def load_lesson(
    spec: str | Path,
    host: PluginHost | None = None,
    *,
    extra_dirs: Sequence[str | Path] = (),
) -> Lesson:
    """Read and validate a lesson by name, number or path; see the module docstring."""
    path = resolve_lesson(spec, extra_dirs)
    root = compose_file(path)
    return _build(root, str(path), path.parent, host, name=path.stem)


def preflight(spec: str | Path, extra_dirs: Sequence[str | Path] = ()) -> Path:
    """Resolve and read a lesson without plugins: the cheap checks, first.

    Raises what :func:`load_lesson` would for a file that is not a readable,
    safe YAML document (UsageError, or LessonError for size, encoding, syntax,
    tags, anchors, duplicate keys), and LessonError for the problems of its
    structure that no plugin can change (:func:`structure_problems`: an
    unknown key, a step that is not a mapping), so such files are refused
    before the plugins (and torch) are loaded. Returns the lesson's path.
    """
    path = resolve_lesson(spec, extra_dirs)
    root = compose_file(path)
    problems = structure_problems(root, str(path), path.parent)
    if problems:
        raise LessonError(problems)
    return path


def structure_problems(root: yaml.Node | None, path: str, base_dir: Path) -> list[Problem]:
    """The problems of a lesson's structure, found without loading a plugin (or torch).

    The grammar reads the lesson with no plugins installed, and only what no plugin
    could change is kept: the keys of the lesson, of its steps and of every mapping
    in them (each checked against the grammar's fixed key tables), and the shape of
    the YAML (a mapping where one is needed, the lesson's required keys, one kind a
    step, quiz ids used once). The names of variants, stages and options are left to
    the full reading, with the plugins. Each problem kept is one that reading reports
    too, word for word. ``[]`` when the structure is sound, or when reading it without
    plugins fails (the full reading then says why).
    """
    if root is None or not isinstance(root, yaml.MappingNode):
        reader = _StructureReader(path, base_dir)  # refused before anything else is read
        reader.lesson(root, Path(path).stem)
        return one_line(reader.problems)
    try:
        reader = _StructureReader(path, base_dir)
        reader.lesson(root, Path(path).stem)
    except Exception:  # only a shortcut: the full reading reports what went wrong
        return []
    return one_line(reader.structural)


_STRUCTURE = frozenset(
    {
        "Reader.lesson",
        "Reader.top",
        "Reader.steps",
        "Reader.step",
        "Reader.step_kind",
        "Reader.beside",
        "Reader.unique_ids",
        "ReaderBase.mapping",
    }
)
"""The grammar's methods whose problems need no plugin: the lesson's and each step's keys,
the mappings' keys against fixed tables, the YAML's shape, quiz ids."""
_PASSED_ON = frozenset({"ReaderBase.require"})
"""Helpers whose problems are their caller's: a required key is structure where the lesson's
own keys are read, not where a step may take it from its section's defaults."""


class _StructureReader(Reader):
    """The grammar with no plugins, keeping the problems :data:`_STRUCTURE` reports."""

    def __init__(self, path: str, base_dir: Path) -> None:
        from tracer.plugin_host import PluginHost  # no entry points, no folders: no plugin code

        super().__init__(path, base_dir, PluginHost(entry_points=False, use_env=False))
        self.structural: list[Problem] = []

    def problem(self, node: Any, message: str) -> None:
        super().problem(node, message)
        depth = 1
        while sys._getframe(depth).f_code.co_qualname in _PASSED_ON:
            depth += 1
        if sys._getframe(depth).f_code.co_qualname in _STRUCTURE:
            self.structural.append(self.problems[-1])

    def stop_at(self, first: int, why: str) -> None:
        """Every step is read: without plugins, each variant is unknown (not a reason to stop)."""


def parse_lesson(
    text: str,
    path: str = "<lesson>",
    host: PluginHost | None = None,
    *,
    base_dir: Path | None = None,
) -> Lesson:
    """Validate lesson text; ``base_dir`` is where relative inputs files are looked up."""
    if len(text) > MAX_BYTES:
        raise LessonError([Problem(1, 1, "lesson is too large (the limit is 1 MB)", path)])
    try:
        root = compose_text(text, path)
    except DocumentError as exc:
        raise LessonError(tidy(exc.problems)) from None
    return _build(root, path, base_dir or Path.cwd(), host, name=Path(path).stem)


def _build(
    root: yaml.Node | None, path: str, base_dir: Path, host: PluginHost | None, *, name: str
) -> Lesson:
    if host is None:
        from tracer.plugin_host import PluginHost

        host = PluginHost()
    reader = Reader(path, base_dir, host)
    lesson = reader.lesson(root, name)
    if reader.problems or lesson is None:
        raise LessonError(one_line(reader.problems), reader.partial)
    return lesson


def iter_steps(lesson: Lesson) -> Iterator[tuple[int, LessonStep]]:
    """(1-based number, step) for each step of a lesson."""
    yield from enumerate(lesson.steps, start=1)


__all__ = [
    "ANSWER_KEYS",
    "BINARY_OPERATIONS",
    "CHECKPOINT_KEYS",
    "COMPARE_KEYS",
    "DEFAULT_KEYS",
    "DEFAULT_TOLERANCE",
    "ENV_DIRS",
    "FLAG_OPERATIONS",
    "LESSON_KEYS",
    "LESSON_SUFFIXES",
    "LOOP_KEYS",
    "OPTION_KEYS",
    "QUIZ_KEYS",
    "REDUCTIONS",
    "REF_KEYS",
    "SHOW_KEYS",
    "SIDE_KEYS",
    "LessonError",
    "find_lessons",
    "iter_steps",
    "lesson_dirs",
    "load_lesson",
    "one_line",
    "parse_lesson",
    "preflight",
    "resolve_lesson",
    "shipped_dir",
    "structure_problems",
]
