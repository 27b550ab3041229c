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

Loading is static: YAML is read through :mod:`tracer.yamldoc` (no Python
objects, no tags, anchors or duplicate keys), every key is checked (with
"did you mean"), and variant and stage names are checked against the plugins
in ``host``. Nothing is computed here and torch is not imported by this module;
:func:`tracer.lessons.check.check_lesson` runs the lesson to check what only a
run can tell (tensor names, index ranges).
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tracer.errors import EXIT_PROBLEMS, TracerError, UsageError
from tracer.inputs import InputSet, parse_input_node
from tracer.inputs.weights import INITS
from tracer.lessons.model import (
    OPERATIONS,
    STEP_KINDS,
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
from tracer.suggest import did_you_mean
from tracer.yamldoc import MAX_BYTES, DocumentError, Problem, compose, decode

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost

LESSON_SUFFIXES = (".yaml", ".yml")
DEFAULT_TOLERANCE = 0.01
ENV_DIRS = "ATTN_LESSONS_DIR"

LESSON_KEYS = ("title", "summary", "inputs", "options", "steps")
OPTION_KEYS = ("seed", "init", "d_out", "dropout", "heads")
REF_KEYS = ("variant", "stage", "tensor", "query", "inputs", "options", "then")
SHOW_KEYS = (*REF_KEYS, "focus", "caption")
LOOP_KEYS = ("variant", "stage", "query", "inputs", "options", "limit", "caption")
SIDE_KEYS = (*REF_KEYS, "label")
COMPARE_KEYS = (*REF_KEYS, "left", "right", "caption")
ANSWER_KEYS = (*REF_KEYS, "cell")
QUIZ_KEYS = ("id", "question", "answer", "choices", "tolerance", "explanation")
CHECKPOINT_KEYS = ("title", "points")
FOCUS_KEYS = ("token", "row", "column", "cell")
STEP_KEYS: dict[str, tuple[str, ...]] = {
    "show": SHOW_KEYS,
    "loop": LOOP_KEYS,
    "compare": COMPARE_KEYS,
    "quiz": QUIZ_KEYS,
    "checkpoint": CHECKPOINT_KEYS,
}
FLAG_OPERATIONS = ("diagonal", "transpose", "exp")

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"


class LessonError(TracerError):
    """A lesson with problems; ``problems`` lists every one, in file order."""

    exit_status = EXIT_PROBLEMS

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0] if problems else Problem(1, 1, "invalid lesson")
        super().__init__(first.message, first.location)
        self.problems = problems or [first]

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


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
    found: list[tuple[Path, str]] = [(p, "built-in") for p in _yaml_files(shipped_dir())]
    for folder in lesson_dirs(extra_dirs, use_env=use_env):
        found += [(p, str(folder)) for p in _yaml_files(folder)]
    refs = []
    for number, (path, origin) in enumerate(found, start=1):
        title, problem = _peek_title(path)
        refs.append(LessonRef(number, path.stem, title, path, origin, problem))
    return refs


def _yaml_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in LESSON_SUFFIXES and p.is_file())


def _peek_title(path: Path) -> tuple[str, str | None]:
    try:
        root = _compose_file(path)
    except (DocumentError, UsageError) as exc:
        problems = getattr(exc, "problems", None)
        return "", str(problems[0]) if problems else str(exc)
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
    root = _compose_file(path)
    return _build(root, str(path), path.parent, host, name=path.stem)


def preflight(spec: str | Path, extra_dirs: Sequence[str | Path] = ()) -> Path:
    """Resolve and read a lesson as YAML only, without plugins: the cheap checks, first.

    Raises what :func:`load_lesson` would for a file that is not a readable,
    safe YAML document (UsageError, or LessonError for size, encoding, syntax,
    tags, anchors, duplicate keys), so hostile files are refused before the
    plugins (and torch) are loaded. Returns the lesson's path.
    """
    path = resolve_lesson(spec, extra_dirs)
    _compose_file(path)
    return path


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
        root = _compose_text(text, path)
    except DocumentError as exc:
        raise LessonError(_tidy(exc.problems)) from None
    return _build(root, path, base_dir or Path.cwd(), host, name=Path(path).stem)


def _compose_file(path: Path) -> yaml.Node | None:
    where = str(path)
    try:
        if path.is_dir():
            raise UsageError(f"{path} is a folder; give a lesson file (.yaml)")
        size = path.stat().st_size
        if size > MAX_BYTES:
            problem = Problem(
                1, 1, f"lesson is too large ({size / 1e6:.1f} MB; the limit is 1 MB)", where
            )
            raise LessonError([problem])
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"lesson file not found: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read lesson file {path}: {exc.strerror}") from None
    try:
        return _compose_text(decode(data, where), where)
    except DocumentError as exc:
        raise LessonError(_tidy(exc.problems)) from None


MAX_FLOW_DEPTH = 100
"""PyYAML's scanner slows down quadratically with [ and { nesting (2,000 levels take
seconds); a lesson needs a handful, so deeper text is refused before parsing."""
_BRACKETS = re.compile(r"[\[\]{}]")
# What YAML forbids in a stream (its printable set, inverted); found up front for a clear position.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def _precheck(text: str, path: str) -> list[Problem]:
    problems = []
    bad = _FORBIDDEN.search(text)
    if bad is not None:
        line, column = _line_column(text, bad.start())
        code = f"U+{ord(bad.group()):04X}"
        problems.append(
            Problem(line, column, f"control character {code} is not allowed in YAML text", path)
        )
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        if depth > MAX_FLOW_DEPTH:
            line, column = _line_column(text, match.start())
            message = f"document nests too deeply (more than {MAX_FLOW_DEPTH} levels of [ and {{)"
            problems.append(Problem(line, column, message, path))
            break
    return problems


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _compose_text(text: str, path: str) -> yaml.Node | None:
    problems = _precheck(text, path)
    if problems:
        raise DocumentError(problems)
    try:
        return compose(text, path)
    except RecursionError:
        raise DocumentError([Problem(1, 1, "document nests too deeply", path)]) from None


_HINTS = {
    # The commonest slip in prose: "caption: Note: ..." reads as a mapping inside a value.
    "mapping values are not allowed here": (
        "; text that contains ': ' must be quoted, or written as a block after '>-'"
    ),
    "found character '\\t' that cannot start any token": "; indent with spaces, not tabs",
}


def _tidy(problems: list[Problem]) -> list[Problem]:
    """Add hints to PyYAML's terse messages; fold anchors and aliases into one line.

    A billion-laughs file would otherwise print a hundred lines, one per alias.
    """
    hinted = []
    for problem in problems:
        for text, hint in _HINTS.items():
            if text in problem.message:
                problem = Problem(
                    problem.line, problem.column, problem.message + hint, problem.path
                )
        hinted.append(problem)
    problems = one_line(hinted)
    shared = [p for p in problems if "are not allowed; repeat the value" in p.message]
    if len(shared) <= 1:
        return problems
    first = shared[0]
    summary = Problem(
        first.line,
        first.column,
        f"{first.message} ({_more(len(shared) - 1)} in this file)",
        first.path,
    )
    return sorted([p for p in problems if p not in shared] + [summary])


def _build(
    root: yaml.Node | None, path: str, base_dir: Path, host: PluginHost | None, *, name: str
) -> Lesson:
    if host is None:
        from tracer.plugin_host import PluginHost

        host = PluginHost()
    reader = _Reader(path, base_dir, host)
    lesson = reader.lesson(root, name)
    if reader.problems or lesson is None:
        raise LessonError(one_line(reader.problems))
    return lesson


# Validation ------------------------------------------------------------------


@dataclass
class _Scope:
    """What a step inherits: the options so far and the tokens of their inputs."""

    options: Options

    @property
    def tokens(self) -> tuple[str, ...]:
        assert self.options.inputs is not None
        return self.options.inputs.tokens


class _Reader:
    def __init__(self, path: str, base_dir: Path, host: PluginHost) -> None:
        self.path = path
        self.base_dir = base_dir
        self.host = host
        self.problems: list[Problem] = []

    # helpers -----------------------------------------------------------------

    def problem(self, node: Any, message: str) -> None:
        mark = getattr(node, "start_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(Problem(line, column, message, self.path))

    def mapping(
        self, node: yaml.Node, what: str, allowed: Sequence[str]
    ) -> dict[str, tuple[yaml.Node, yaml.Node]] | None:
        """The entries of a mapping node (key -> (key node, value node)), unknown keys reported."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping, not {_kind(node)}")
            return None
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, f"keys in {what} must be plain words, not {_kind(key_node)}")
                continue
            key = str(key_node.value)
            if key not in allowed:
                self.problem(
                    key_node,
                    f"unknown key '{key}' in {what}{did_you_mean(key, allowed)}; "
                    f"expected {_listing(allowed)}",
                )
                continue
            entries[key] = (key_node, value_node)
        return entries

    def text(self, node: yaml.Node, what: str, *, empty_ok: bool = False) -> str | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL:
            self.problem(node, f"{what} must be text, not {_kind(node)}")
            return None
        value = str(node.value)
        if not value.strip() and not empty_ok:
            self.problem(node, f"{what} is empty")
            return None
        return value

    def integer(self, node: yaml.Node, what: str, *, minimum: int | None = None) -> int | None:
        value = _scalar(node)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(node, f"{what} must be a whole number, not {_kind(node)}")
            return None
        if minimum is not None and value < minimum:
            self.problem(node, f"{what} must be at least {minimum}, got {value}")
            return None
        return value

    def number(self, node: yaml.Node, what: str) -> float | None:
        value = _scalar(node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(node, f"{what} must be a number, not {_kind(node)}")
            return None
        if value != value or value in (float("inf"), float("-inf")):
            self.problem(node, f"{what} must be a finite number, got {node.value}")
            return None
        return float(value)

    def index(
        self, node: yaml.Node, what: str, tokens: tuple[str, ...], size: int | None = None
    ) -> int | None:
        """A 0-based index into the tokens, given as a number or as a token."""
        value = _scalar(node)
        limit = len(tokens) if size is None else size
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < limit:
                self.problem(
                    node, f"{what} {value} is out of range: valid indices are 0 to {limit - 1}"
                )
                return None
            return value
        if isinstance(value, str) and value:
            if value in tokens:
                return tokens.index(value)
            self.problem(
                node,
                f"{what} '{value}' is not one of the tokens{did_you_mean(value, tokens)}; "
                f"tokens: {' '.join(tokens)}",
            )
            return None
        self.problem(node, f"{what} must be a token or a 0-based index, not {_kind(node)}")
        return None

    # the lesson ----------------------------------------------------------------

    def lesson(self, root: yaml.Node | None, name: str) -> Lesson | None:
        if root is None:
            self.problems.append(
                Problem(1, 1, "lesson is empty; it needs a title, a summary and steps", self.path)
            )
            return None
        if not isinstance(root, yaml.MappingNode):
            self.problem(
                root, f"a lesson must be a mapping with title, summary and steps, not {_kind(root)}"
            )
            return None
        entries = self.mapping(root, "the lesson", LESSON_KEYS) or {}
        title = summary = None
        misspelt = {_closest(key, LESSON_KEYS) for key, _ in _keys(root) if key not in LESSON_KEYS}
        for required in ("title", "summary", "steps"):
            # "sumary: ..." already got "did you mean 'summary'"; saying it is missing adds nothing.
            if required not in entries and required not in misspelt:
                self.problem(root, f"the lesson has no '{required}'")
        if "title" in entries:
            title = self.text(entries["title"][1], "title")
        if "summary" in entries:
            summary = self.text(entries["summary"][1], "summary")
        options = self.options(entries, self.base_options())
        scope = _Scope(options)
        steps: list[LessonStep] = []
        if "steps" in entries:
            node = entries["steps"][1]
            if not isinstance(node, yaml.SequenceNode):
                self.problem(node, f"steps must be a list, not {_kind(node)}")
            elif not node.value:
                self.problem(node, "steps is empty; a lesson needs at least one step")
            else:
                for number, item in enumerate(node.value, start=1):
                    step = self.step(item, number, scope)
                    if step is not None:
                        steps.append(step)
                self.unique_ids(steps)
        if self.problems or title is None or summary is None:
            return None
        return Lesson(
            title=title,
            summary=summary,
            options=options,
            steps=tuple(steps),
            path=Path(self.path),
            name=name,
        )

    def unique_ids(self, steps: list[LessonStep]) -> None:
        """Quiz ids name a learner's progress, so two quizzes may not share one."""
        seen: dict[str, Quiz] = {}
        for step in steps:
            if isinstance(step, Quiz) and step.id is not None:
                first = seen.setdefault(step.id, step)
                if first is not step:
                    self.problems.append(
                        Problem(
                            step.line,
                            step.column,
                            f"quiz id '{step.id}' is already used by the quiz at line {first.line}",
                            self.path,
                        )
                    )

    def base_options(self) -> Options:
        from tracer.inputs.builtin import BUILTIN_INPUTS
        from tracer.runner import DEFAULT_INIT, DEFAULT_INPUTS, DEFAULT_SEED

        return Options(
            inputs=BUILTIN_INPUTS[DEFAULT_INPUTS], seed=DEFAULT_SEED, init=DEFAULT_INIT, dropout=0.0
        )

    def options(self, entries: dict[str, tuple[yaml.Node, yaml.Node]], base: Options) -> Options:
        """``inputs`` and ``options`` from a mapping's entries, over ``base``."""
        inputs = self.inputs(entries["inputs"][1]) if "inputs" in entries else None
        seed = init = d_out = dropout = heads = None
        if "options" in entries:
            node = entries["options"][1]
            fields = self.mapping(node, "options", OPTION_KEYS) or {}
            if "seed" in fields:
                seed = self.integer(fields["seed"][1], "seed")
            if "init" in fields:
                value = self.text(fields["init"][1], "init")
                if value is not None and value not in INITS:
                    self.problem(
                        fields["init"][1],
                        f"unknown init '{value}'{did_you_mean(value, INITS)}; "
                        f"choose one of {', '.join(INITS)}",
                    )
                else:
                    init = value
            if "d_out" in fields:
                d_out = self.integer(fields["d_out"][1], "d_out", minimum=1)
            if "dropout" in fields:
                dropout = self.number(fields["dropout"][1], "dropout")
                if dropout is not None and not 0.0 <= dropout < 1.0:
                    self.problem(
                        fields["dropout"][1],
                        f"dropout must be at least 0 and below 1, got {dropout:g}",
                    )
                    dropout = None
            if "heads" in fields:
                heads = self.integer(fields["heads"][1], "heads", minimum=1)
        merged = Options(inputs, seed, init, d_out, dropout, heads).over(base)
        explicit = merged.inputs.d_out if merged.inputs is not None else None
        if explicit is not None and merged.d_out not in (None, explicit) and "options" in entries:
            self.problem(
                entries["options"][1],
                f"d_out {merged.d_out} disagrees with the weights of the inputs, "
                f"which have d_out = {explicit}",
            )
        return merged

    def inputs(self, node: yaml.Node) -> InputSet | None:
        from tracer.inputs import load_inputs

        if isinstance(node, yaml.MappingNode):
            input_set, problems = parse_input_node(node, self.path, name="inline")
            self.problems.extend(problems)
            return input_set
        spec = self.text(node, "inputs")
        if spec is None:
            return None
        from tracer.inputs.builtin import BUILTIN_INPUTS

        if spec not in BUILTIN_INPUTS:
            candidate = self.base_dir / spec
            looks_like_file = Path(spec).suffix.lower() in (".yaml", ".yml", ".json") or "/" in spec
            if not looks_like_file:
                self.problem(
                    node,
                    f"unknown input set '{spec}'{did_you_mean(spec, BUILTIN_INPUTS)}; "
                    f"built-in sets: {', '.join(sorted(BUILTIN_INPUTS))}, "
                    "or give a .yaml/.json file",
                )
                return None
            if not candidate.is_file():
                self.problem(node, f"inputs file not found: {candidate}")
                return None
            spec = str(candidate)
        try:
            return load_inputs(spec)
        except TracerError as exc:
            where = exc.location
            if where is not None and where.line is not None:
                self.problems.append(
                    Problem(where.line, where.column or 1, exc.message, where.path)
                )
            else:
                self.problem(node, exc.message)
            return None

    # steps -------------------------------------------------------------------

    def step(self, node: yaml.Node, number: int, scope: _Scope) -> LessonStep | None:
        what = f"step {number}"
        if not isinstance(node, yaml.MappingNode) or not node.value:
            self.problem(
                node,
                f"{what} must be a mapping with one of {_listing(STEP_KINDS)}, not {_kind(node)}",
            )
            return None
        kinds = [
            (str(k.value), k, v)
            for k, v in node.value
            if isinstance(k, yaml.ScalarNode) and str(k.value) in STEP_KINDS
        ]
        if not kinds:
            key_node = node.value[0][0]
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            self.problem(
                key_node,
                f"unknown step kind '{key}'{did_you_mean(key, STEP_KINDS)}; "
                f"a step is one of {_listing(STEP_KINDS)}",
            )
            return None
        kind, kind_node, body = kinds[0]
        for key_node, _ in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            if key_node is kind_node:
                continue
            if key in STEP_KINDS:
                self.problem(
                    key_node,
                    f"{what} has two kinds, '{kind}' and '{key}'; start a new step with '- {key}:'",
                )
            elif key in STEP_KEYS.get(kind, ()):
                self.problem(
                    key_node, f"'{key}' belongs inside '{kind}': indent it under '{kind}:'"
                )
            else:
                self.problem(key_node, f"unknown key '{key}' beside '{kind}' in {what}")
        line, column = kind_node.start_mark.line + 1, kind_node.start_mark.column + 1
        if kind == "narration":
            text = self.text(body, "narration")
            return Narration(text, line, column) if text is not None else None
        if kind == "checkpoint":
            return self.checkpoint(body, line, column)
        if kind == "quiz":
            return self.quiz(body, scope, line, column)
        entries = self.mapping(body, f"'{kind}'", STEP_KEYS[kind])
        if entries is None:
            return None
        if kind == "show":
            return self.show(body, entries, scope, line, column)
        if kind == "loop":
            return self.loop(body, entries, scope, line, column)
        return self.compare(body, entries, scope, line, column)

    def ref(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        what: str,
    ) -> TensorRef | None:
        """variant/stage/tensor/query/inputs/options/then of a show, a compare side or an answer."""
        ok = True
        variant = stage = None
        options = self.options(entries, scope.options)
        tokens = options.inputs.tokens if options.inputs is not None else scope.tokens
        if "variant" in entries:
            variant = self.variant(entries["variant"][1])
            ok = ok and variant is not None
        else:
            self.problem(node, f"{what} needs a 'variant'")
            ok = False
        if "stage" in entries:
            stage = self.text(entries["stage"][1], "stage")
            if stage is not None and variant is not None:
                stage = self.stage(entries["stage"][1], variant, stage)
            ok = ok and stage is not None
        else:
            self.problem(node, f"{what} needs a 'stage'")
            ok = False
        tensor = None
        if "tensor" in entries:
            tensor = self.text(entries["tensor"][1], "tensor")
            ok = ok and tensor is not None
        query = None
        if "query" in entries:
            query = self.index(entries["query"][1], "query", tokens)
            ok = ok and query is not None
        then: tuple[Operation, ...] = ()
        if "then" in entries:
            operations = self.operations(entries["then"][1], tokens)
            ok = ok and operations is not None
            then = operations or ()
        if not ok or variant is None or stage is None:
            return None
        return TensorRef(
            variant=variant,
            stage=stage,
            tensor=tensor,
            query=query,
            options=options,
            then=then,
            line=node.start_mark.line + 1,
            column=node.start_mark.column + 1,
        )

    def variant(self, node: yaml.Node) -> str | None:
        name = self.text(node, "variant")
        if name is None:
            return None
        if name not in self.host.variants:
            known = ", ".join(sorted(self.host.variants)) or "none"
            failed = [r for r in self.host.failures if name in (r.name, r.source)]
            if failed:
                self.problem(
                    node, f"variant '{name}' is unavailable: plugin '{failed[0].name}' failed"
                )
            else:
                self.problem(
                    node,
                    f"unknown variant '{name}'{did_you_mean(name, self.host.variants)}; "
                    f"known variants: {known}",
                )
            return None
        return name

    def stage(self, node: yaml.Node, variant: str, name: str) -> str | None:
        stages = self.host.variants[variant].stages
        if name not in stages:
            self.problem(
                node,
                f"variant '{variant}' has no stage '{name}'{did_you_mean(name, stages)}; "
                f"its stages: {', '.join(stages)}",
            )
            return None
        return name

    def operations(self, node: yaml.Node, tokens: tuple[str, ...]) -> tuple[Operation, ...] | None:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        found: list[Operation] = []
        ok = True
        for item in items:
            operation = self.operation(item, tokens)
            ok = ok and operation is not None
            if operation is not None:
                found.append(operation)
        return tuple(found) if ok else None

    def operation(self, node: yaml.Node, tokens: tuple[str, ...]) -> Operation | None:
        if isinstance(node, yaml.ScalarNode) and node.tag != _NULL:
            name, value_node = str(node.value), None
        elif isinstance(node, yaml.MappingNode) and len(node.value) == 1:
            key_node, value_node = node.value[0]
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, f"an operation's name must be a word, not {_kind(key_node)}")
                return None
            name = str(key_node.value)
            node = key_node
        else:
            self.problem(
                node,
                f"an operation is one name and its value, like 'softmax: 0', not {_kind(node)}",
            )
            return None
        if name not in OPERATIONS:
            self.problem(
                node,
                f"unknown operation '{name}'{did_you_mean(name, OPERATIONS)}; "
                f"operations: {_listing(OPERATIONS)}",
            )
            return None
        if name in FLAG_OPERATIONS:
            if value_node is not None and _scalar(value_node) is not True:
                self.problem(value_node, f"'{name}' takes no value; write '- {name}'")
                return None
            return Operation(name, True)
        if value_node is None:
            self.problem(node, f"'{name}' needs a value: {OPERATIONS[name]}")
            return None
        if name == "pick":
            index = self.index(value_node, "pick", tokens, size=1 << 30)
            return Operation(name, index) if index is not None else None
        if name == "scale":
            factor = self.number(value_node, "scale")
            return Operation(name, factor) if factor is not None else None
        dim = self.integer(value_node, f"the dimension of '{name}'")
        return Operation(name, dim) if dim is not None else None

    def show(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        line: int,
        column: int,
    ) -> Show | None:
        ref = self.ref(node, entries, scope, "'show'")
        focus = None
        if "focus" in entries:
            tokens = ref.options.inputs.tokens if ref and ref.options.inputs else scope.tokens
            focus = self.focus(entries["focus"][1], tokens)
        caption = self.caption(entries)
        if ref is None or caption is None or ("focus" in entries and focus is None):
            return None
        return Show(ref, focus, caption, line, column)

    def caption(self, entries: dict[str, tuple[yaml.Node, yaml.Node]]) -> str | None:
        if "caption" not in entries:
            return ""
        return self.text(entries["caption"][1], "caption")

    def focus(self, node: yaml.Node, tokens: tuple[str, ...]) -> Focus | None:
        if isinstance(node, yaml.ScalarNode):
            index = self.index(node, "focus", tokens)
            return Focus("token", index, index) if index is not None else None
        entries = self.mapping(node, "focus", FOCUS_KEYS)
        if entries is None:
            return None
        if len(entries) != 1:
            if len(node.value) == len(entries):  # unknown keys were reported already
                self.problem(node, "focus takes exactly one of token, row, column or cell")
            return None
        ((key, (_, value)),) = entries.items()
        if key == "cell":
            cell = self.cell(value, tokens)
            return Focus("cell", cell[0], cell[1]) if cell is not None and len(cell) == 2 else None
        index = self.index(value, f"focus {key}", tokens)
        if index is None:
            return None
        if key == "token":
            return Focus("token", index, index)
        if key == "row":
            return Focus("row", row=index)
        return Focus("column", column=index)

    def cell(self, node: yaml.Node, tokens: tuple[str, ...]) -> tuple[int, ...] | None:
        if not isinstance(node, yaml.SequenceNode) or not 1 <= len(node.value) <= 2:
            self.problem(
                node, f"cell must be [row, column] (tokens or 0-based indices), not {_kind(node)}"
            )
            return None
        if isinstance(node, yaml.SequenceNode) and len(node.value) == 1:
            self.problem(
                node, "cell must be [row, column] (tokens or 0-based indices), not one value"
            )
            return None
        row = self.index(node.value[0], "cell row", tokens)
        column = self.index(node.value[1], "cell column", tokens)
        if row is None or column is None:
            return None
        return (row, column)

    def loop(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        line: int,
        column: int,
    ) -> Loop | None:
        ok = True
        variant = stage = None
        options = self.options(entries, scope.options)
        tokens = options.inputs.tokens if options.inputs is not None else scope.tokens
        if "variant" not in entries:
            self.problem(node, "'loop' needs a 'variant'")
            ok = False
        else:
            variant = self.variant(entries["variant"][1])
        if "stage" not in entries:
            self.problem(node, "'loop' needs a 'stage'")
            ok = False
        else:
            stage = self.text(entries["stage"][1], "stage")
            if stage is not None and variant is not None:
                stage = self.stage(entries["stage"][1], variant, stage)
            if stage is not None and variant is not None:
                loops = self.host.variants[variant].loops
                if stage not in loops:
                    with_loops = sorted(n for n, v in self.host.variants.items() if v.loops)
                    if loops:
                        message = (
                            f"stage '{stage}' of '{variant}' is not built by a loop; "
                            f"its loops: {', '.join(loops)}"
                        )
                    else:
                        message = (
                            f"variant '{variant}' has no loops to step through; "
                            f"variants with loops: {', '.join(with_loops) or 'none'}"
                        )
                    self.problem(entries["stage"][1], message)
                    stage = None
        query = None
        if "query" in entries:
            query = self.index(entries["query"][1], "query", tokens)
            ok = ok and query is not None
        limit = None
        if "limit" in entries:
            limit = self.integer(entries["limit"][1], "limit", minimum=1)
            ok = ok and limit is not None
        caption = self.caption(entries)
        if not ok or variant is None or stage is None or caption is None:
            return None
        return Loop(variant, stage, query, options, limit, caption, line, column)

    def compare(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        line: int,
        column: int,
    ) -> Compare | None:
        # Keys given on 'compare' itself are shared by both sides; each side may override them.
        shared = {
            k: v for k, v in entries.items() if k in REF_KEYS and k not in ("inputs", "options")
        }
        side_scope = _Scope(self.options(entries, scope.options))
        sides: list[TensorRef | None] = []
        for side in ("left", "right"):
            if side not in entries:
                self.problem(node, f"'compare' needs '{side}'")
                sides.append(None)
                continue
            side_node = entries[side][1]
            side_entries = self.mapping(side_node, f"'{side}'", SIDE_KEYS)
            if side_entries is None:
                sides.append(None)
                continue
            ref = self.ref(side_node, {**shared, **side_entries}, side_scope, f"'{side}'")
            label = (
                self.text(side_entries["label"][1], "label") if "label" in side_entries else None
            )
            if ref is not None and label is not None:
                ref = replace(ref, label=label)
            sides.append(ref)
        caption = self.caption(entries)
        left, right = sides
        if left is None or right is None or caption is None:
            return None
        return Compare(left, right, caption, line, column)

    def quiz(self, node: yaml.Node, scope: _Scope, line: int, column: int) -> Quiz | None:
        entries = self.mapping(node, "'quiz'", QUIZ_KEYS)
        if entries is None:
            return None
        for required in ("question", "answer"):
            if required not in entries:
                self.problem(node, f"'quiz' needs '{required}'")
        question = self.text(entries["question"][1], "question") if "question" in entries else None
        explanation = (
            self.text(entries["explanation"][1], "explanation") if "explanation" in entries else ""
        )
        quiz_id = self.text(entries["id"][1], "id") if "id" in entries else None
        choices: tuple[str, ...] = ()
        answer: float | int | TensorRef | None = None
        if "choices" in entries:
            choices_node = entries["choices"][1]
            if not isinstance(choices_node, yaml.SequenceNode):
                self.problem(choices_node, f"choices must be a list, not {_kind(choices_node)}")
            elif len(choices_node.value) < 2:
                count = len(choices_node.value)
                self.problem(choices_node, f"choices needs at least two options; it has {count}")
            else:
                texts = [self.text(item, "a choice") for item in choices_node.value]
                choices = tuple(t for t in texts if t is not None)
                for position, item in enumerate(choices_node.value):
                    if texts[position] is not None and texts.index(texts[position]) < position:
                        self.problem(item, f"choice '{texts[position]}' appears twice")
            if "tolerance" in entries:
                self.problem(
                    entries["tolerance"][0],
                    "tolerance is for number quizzes; a quiz with choices has none",
                )
        tolerance = DEFAULT_TOLERANCE
        if "tolerance" in entries and "choices" not in entries:
            value = self.number(entries["tolerance"][1], "tolerance")
            if value is not None and value < 0:
                self.problem(
                    entries["tolerance"][1], f"tolerance must not be negative, got {value:g}"
                )
            elif value is not None:
                tolerance = value
        if "answer" in entries:
            answer_node = entries["answer"][1]
            if "choices" in entries:
                picked = self.text(answer_node, "answer")
                if picked is not None and choices:
                    if picked in choices:
                        answer = choices.index(picked)
                    else:
                        self.problem(
                            answer_node,
                            f"answer '{picked}' is not one of the choices"
                            f"{did_you_mean(picked, choices)}",
                        )
            elif isinstance(answer_node, yaml.MappingNode):
                answer = self.answer_ref(answer_node, scope)
            else:
                answer = self.number(answer_node, "answer")
                if answer is None and not isinstance(_scalar(answer_node), (int, float)):
                    self.problems[-1] = Problem(
                        self.problems[-1].line,
                        self.problems[-1].column,
                        "answer must be a number, or a mapping naming a computed value "
                        f"(variant, stage, cell), not {_kind(answer_node)}; "
                        "for a choice, add 'choices'",
                        self.path,
                    )
        if question is None or answer is None or explanation is None:
            return None
        return Quiz(
            question=question,
            quiz_kind="choice" if "choices" in entries else "number",
            answer=answer,
            choices=choices,
            tolerance=tolerance if "choices" not in entries else 0.0,
            explanation=explanation,
            id=quiz_id,
            line=line,
            column=column,
        )

    def answer_ref(self, node: yaml.MappingNode, scope: _Scope) -> TensorRef | None:
        entries = self.mapping(node, "answer", ANSWER_KEYS)
        if entries is None:
            return None
        ref = self.ref(node, entries, scope, "answer")
        cell: tuple[int, ...] | None = None
        if "cell" in entries:
            tokens = ref.options.inputs.tokens if ref and ref.options.inputs else scope.tokens
            cell_node = entries["cell"][1]
            if isinstance(cell_node, yaml.SequenceNode):
                if not cell_node.value:
                    self.problem(cell_node, "cell is empty; give [row, column] or [index]")
                    return None
                picked = [
                    self.index(item, "cell index", tokens, size=1 << 30) for item in cell_node.value
                ]
                if any(p is None for p in picked):
                    return None
                cell = tuple(p for p in picked if p is not None)
            else:
                index = self.index(cell_node, "cell index", tokens, size=1 << 30)
                if index is None:
                    return None
                cell = (index,)
        if ref is None:
            return None
        return replace(ref, cell=cell)

    def checkpoint(self, node: yaml.Node, line: int, column: int) -> Checkpoint | None:
        if isinstance(node, yaml.SequenceNode):
            points = [self.text(item, "a checkpoint point") for item in node.value]
            if not points:
                self.problem(node, "checkpoint has no points")
            if any(p is None for p in points) or not points:
                return None
            return Checkpoint("Checkpoint", tuple(p for p in points if p is not None), line, column)
        entries = self.mapping(node, "'checkpoint'", CHECKPOINT_KEYS)
        if entries is None:
            return None
        title = self.text(entries["title"][1], "title") if "title" in entries else "Checkpoint"
        if "points" not in entries:
            self.problem(
                node, "'checkpoint' needs 'points', a list of what the learner should now know"
            )
            return None
        points_node = entries["points"][1]
        if not isinstance(points_node, yaml.SequenceNode) or not points_node.value:
            self.problem(points_node, f"points must be a list of text, not {_kind(points_node)}")
            return None
        texts = [self.text(item, "a checkpoint point") for item in points_node.value]
        if title is None or any(t is None for t in texts):
            return None
        return Checkpoint(title, tuple(t for t in texts if t is not None), line, column)


# Scalars ---------------------------------------------------------------------


def _scalar(node: yaml.Node) -> object:
    """The plain value of a scalar node (int, float, bool, None or str); lists/maps give None.

    Never raises: PyYAML's constructors can fail on oddities such as an
    out-of-range timestamp, and a lesson must never crash the tool.
    """
    if not isinstance(node, yaml.ScalarNode):
        return None
    constructor = yaml.constructor.SafeConstructor()
    try:
        if node.tag == _INT:
            return constructor.construct_yaml_int(node)
        if node.tag == _FLOAT:
            return constructor.construct_yaml_float(node)
        if node.tag == _BOOL:
            return constructor.construct_yaml_bool(node)
        if node.tag == _NULL:
            return None
    except (ValueError, ArithmeticError, yaml.YAMLError):
        return str(node.value)
    return str(node.value)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = _scalar(node)
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"true/false ({node.value})"
    if isinstance(value, (int, float)):
        return f"a number ({node.value})"
    shown = str(value)
    return f"text ('{shown if len(shown) <= 30 else shown[:27] + '...'}')"


def one_line(problems: list[Problem]) -> list[Problem]:
    """Problems sorted, without duplicates, each message on one line.

    Messages quote the author's text, which may hold newlines or tabs (a
    quoted key, a multi-line value); escaping them keeps one problem per line.
    """
    cleaned = {Problem(p.line, p.column, p.message.translate(_ESCAPES), p.path) for p in problems}
    return sorted(cleaned)


_ESCAPES = str.maketrans(
    {c: c.encode("unicode_escape").decode("ascii") for c in "\n\r\t\x0b\x0c\x85\u2028\u2029"}
)


def _more(count: int) -> str:
    return f"{count} more anchor or alias" if count == 1 else f"{count} more anchors or aliases"


def _keys(node: yaml.MappingNode) -> list[tuple[str, yaml.Node]]:
    return [(str(k.value), k) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]


def _closest(word: str, choices: Sequence[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def _listing(names: Sequence[str] | dict[str, str]) -> str:
    return ", ".join(names)


def iter_steps(lesson: Lesson) -> Iterator[tuple[int, LessonStep]]:
    """(1-based number, step) for each step of a lesson."""
    yield from enumerate(lesson.steps, start=1)
