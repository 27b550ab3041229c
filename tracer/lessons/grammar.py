"""The lesson grammar: from a YAML node tree to a :class:`~tracer.lessons.model.Lesson`.

:class:`Reader` walks the tree once, checking every key (with "did you
mean"), every name against the plugins in its host, and every value, and
resolves what the file refers to: tokens to indices, a step's variant and
query from the ``defaults`` in force, the variant's own options (checked
against what it declares), live values in prose. It collects every problem
with its position instead of stopping at the first; nothing is computed here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from tracer.errors import TracerError, UsageError
from tracer.inputs import InputSet, parse_input_node
from tracer.lessons.model import (
    OPERATIONS,
    STEP_KINDS,
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

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost
    from tracer.variant import Variant

_T = TypeVar("_T")
DEFAULT_TOLERANCE = 0.01

LESSON_KEYS = (
    "title",
    "summary",
    "plugins",
    "inputs",
    "options",
    "defaults",
    "values",
    "steps",
)
TRACE_KEYS = ("seed", "init", "d_out", "dropout")
"""The trace options, read into :class:`Options`' own fields."""
OPTION_KEYS = (*TRACE_KEYS, "heads")
"""The option names a lesson may always write: the trace options, and ``heads``, which every
variant may be passed (:data:`tracer.options.LEGACY_OPTIONS`); others are declared by variants."""
"""Options every variant shares; any other name is one of the variant's declared options."""
DEFAULT_KEYS = ("variant", "query", "inputs", "options")
"""What ``defaults:`` sets for the steps after it (the whole lesson, or until the next one)."""
REF_KEYS = ("variant", "stage", "tensor", "query", "inputs", "options", "then")
SHOW_KEYS = (*REF_KEYS, "focus", "caption")
LOOP_KEYS = ("variant", "stage", "query", "inputs", "options", "limit", "caption")
SIDE_KEYS = (*REF_KEYS, "label")
COMPARE_KEYS = (*REF_KEYS, "left", "right", "caption")
ANSWER_KEYS = (*REF_KEYS, "cell")
QUIZ_KEYS = (
    "id",
    "question",
    "show",
    "answer",
    "choices",
    "cells",
    "tolerance",
    "hints",
    "explanation",
)
CHECKPOINT_KEYS = ("title", "points")
FOCUS_KEYS = ("token", "row", "column", "cell")
STEP_KEYS: dict[str, tuple[str, ...]] = {
    "show": SHOW_KEYS,
    "loop": LOOP_KEYS,
    "compare": COMPARE_KEYS,
    "quiz": QUIZ_KEYS,
    "checkpoint": CHECKPOINT_KEYS,
}
FLAG_OPERATIONS = ("diagonal", "transpose", "exp", "abs")
REDUCTIONS = ("sum", "max", "min", "mean", "std", "argmax", "count", "size")
"""Operations over a dimension; all but ``sum`` also take no value (the whole tensor)."""
BINARY_OPERATIONS = ("add", "subtract", "multiply", "divide")
COMPARISONS = (">=", "<=", "==", "!=", ">", "<")
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

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"
_POSITIONED = re.compile(r"^(.+)@(\d+)$")
"""``the@3``: a token named with its 0-based position, for a token the text repeats."""


# Validation ------------------------------------------------------------------


@dataclass
class _Scope:
    """What a step inherits: the options so far, the tokens of their inputs, and the
    ``defaults:`` in force (a variant and a query the step may leave out)."""

    options: Options
    variant: str | None = None
    query: int | None = None

    @property
    def tokens(self) -> tuple[str, ...]:
        assert self.options.inputs is not None
        return self.options.inputs.tokens


class Reader:
    def __init__(self, path: str, base_dir: Path, host: PluginHost) -> None:
        self.path = path
        self.base_dir = base_dir
        self.host = host
        self.problems: list[Problem] = []
        self.values: dict[str, NamedValue] = {}
        self.value_names: set[str] = set()
        """Every name under 'values:', even one whose definition has a problem (reported once)."""
        self.typed: list[TypedNumber] = []
        self.markup: list[Markup] = []
        self.warnings: list[Problem] = []
        # Lesson-wide options apply only to the variants that declare them; one no variant
        # in the lesson declares is reported at the end (a misspelling, or a missing plugin).
        self.shared_values: list[OptionValue] = []
        self.used_options: set[str] = set()
        self.used_variants: set[str] = set()
        self.missing_plugins: list[str] = []
        """Plugins the lesson says it needs that are not installed."""
        self.partial: Lesson | None = None
        """The lesson as far as it could be read, even with problems (for 'check')."""
        from tracer.inputs.builtin import BUILTIN_INPUTS
        from tracer.tracing.runner import DEFAULT_INPUTS

        # A copy, told apart by identity: a lesson that names no inputs gets a variant's own.
        self.default_inputs = replace(BUILTIN_INPUTS[DEFAULT_INPUTS])
        self.fatal: str | None = None
        """Why the steps cannot be checked (inputs not found, a plugin not installed): what
        would follow from a default instead is not reported (see :meth:`stop_at`)."""

    # helpers -----------------------------------------------------------------

    def problem(self, node: Any, message: str) -> None:
        mark = getattr(node, "start_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(Problem(line, column, message, self.path))

    def stop_at(self, first: int, why: str) -> None:
        """The problem at ``first`` (reported just now) makes the steps meaningless: say so in
        its own line, and check no step (the first such problem is the one that says it)."""
        if self.fatal is not None or first >= len(self.problems):
            return
        self.fatal = why
        problem = self.problems[first]
        self.problems[first] = Problem(
            problem.line, problem.column, f"{problem.message}; {why}", problem.path
        )

    def warn(self, node: Any, message: str) -> None:
        """Something the lesson may not mean, which it still loads with (check says it)."""
        mark = getattr(node, "start_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.warnings.append(Problem(line, column, f"warning: {message}", self.path))

    def problem_at(self, line: int, column: int, message: str) -> None:
        self.problems.append(Problem(line, column, message, self.path))

    def locate(self, node: yaml.Node, needle: str, nth: int = 0) -> tuple[int, int]:
        """Where the ``nth`` occurrence of ``needle`` is written inside ``node`` (its start if
        the text is not found verbatim, e.g. across a folded line)."""
        start, end = node.start_mark, node.end_mark
        buffer = getattr(start, "buffer", None)
        if isinstance(buffer, str):
            offset = start.index - 1
            for _ in range(nth + 1):
                offset = buffer.find(needle, offset + 1, end.index)
                if offset < 0:
                    break
            if offset >= 0:
                return line_column(buffer, offset)
        return start.line + 1, start.column + 1

    def prose(
        self, node: yaml.Node, what: str, *, quiz: bool = False, answer_ok: bool = False
    ) -> str | None:
        """Text shown to the learner: live values checked, typed numbers noted for 'check'."""
        text = self.text(node, what)
        if text is None:
            return None
        seen: dict[str, int] = {}
        for placeholder in placeholders(text):
            raw = text[placeholder.start : placeholder.end]
            nth = seen.get(raw, 0)
            seen[raw] = nth + 1
            line, column = self.locate(node, raw, nth)
            name = placeholder.name
            if name == ANSWER and quiz:
                if not answer_ok:
                    self.problem_at(
                        line, column, f"{{{{answer}}}} in the {what} would give the answer away; "
                        "use it in the explanation",
                    )  # fmt: skip
            elif name not in self.values and name not in self.value_names:
                known = sorted(self.values) + ([ANSWER] if answer_ok else [])
                listing = ", ".join(known) if known else "none; declare them under 'values:'"
                self.problem_at(
                    line, column, f"unknown value '{name}' in the {what}"
                    f"{did_you_mean(name, known)}; values: {listing}",
                )  # fmt: skip
            problem = format_problem(placeholder.format)
            if problem is not None:
                self.problem_at(line, column, problem)
        counted: dict[str, int] = {}
        for _, number in typed_numbers(text):
            nth = counted.get(number, 0)
            counted[number] = nth + 1
            line, column = self.locate(node, number, nth)
            self.typed.append(TypedNumber(number, what, line, column))
        marks: dict[str, int] = {}
        for _, written, kind in markup(text):
            first = written.split("\n")[0]  # a folded text is found by its first line
            nth = marks.get(first, 0)
            marks[first] = nth + 1
            line, column = self.locate(node, first, nth)
            self.markup.append(Markup(written, kind, what, line, column))
        self.cut_comment(node, what)
        return text

    def cut_comment(self, node: yaml.Node, what: str) -> None:
        """A plain (unquoted) one-line text followed by ' #': YAML reads the rest as a comment."""
        if not isinstance(node, yaml.ScalarNode) or node.style is not None:
            return
        buffer = getattr(node.end_mark, "buffer", None)
        if not isinstance(buffer, str) or node.start_mark.line != node.end_mark.line:
            return
        rest = buffer[node.end_mark.index : buffer.find("\n", node.end_mark.index)]
        if rest.lstrip(" ").startswith("#"):
            line, column = line_column(buffer, node.end_mark.index + rest.index("#"))
            self.problem_at(
                line, column, f"the {what} is cut here: YAML reads ' #' and what follows as a "
                "comment; put the text in quotes to keep it",
            )  # fmt: skip

    def mapping(
        self, node: yaml.Node, what: str, allowed: Sequence[str] | None
    ) -> dict[str, tuple[yaml.Node, yaml.Node]] | None:
        """The entries of a mapping node (key -> (key node, value node)), unknown keys reported
        (``allowed`` None: any key)."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{what} must be a mapping, not {_kind(node)}")
            return None
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, f"keys in {what} must be plain words, not {_kind(key_node)}")
                continue
            key = str(key_node.value)
            if allowed is not None and key not in allowed:
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
            hint = ""
            if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) and what in PROSE_FIELDS:
                bracket = "[" if isinstance(node, yaml.SequenceNode) else "{"
                hint = f"; text starting with '{bracket}' must be in quotes"
            self.problem(node, f"{what} must be text, not {_kind(node)}{hint}")
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
            if value < 0:
                self.problem(node, f"{what} {value} is out of range: indices start at 0")
                return None
            if value >= limit:
                shown = f"{value:,}" if value >= 10**6 else str(value)
                self.problem(
                    node, f"{what} {shown} is out of range: valid indices are 0 to {limit - 1:,}"
                )
                return None
            return value
        if isinstance(value, str) and value:
            positions = [index for index, token in enumerate(tokens) if token == value]
            also = [i for i, token in enumerate(source_tokens(tokens) or ()) if token == value]
            if positions and also and also != positions:
                # Cross-attention: the target's token is read, and a key axis holds the
                # source's; the learner's typed cells refuse it (grading's in_both).
                self.warn(
                    node,
                    f"{what} '{value}' is in both sequences: token "
                    f"{', '.join(map(str, positions))} of the target and "
                    f"{', '.join(map(str, also))} of the source (counted from 0); a cell "
                    "reads it on a key axis as the source's, anything else as the target's; "
                    "write the 0-based index to say which",
                )
                return positions[0]
            if len(positions) > 1:
                # The first may not be the one meant, so it is never picked silently; but
                # lessons written before 'the@3' existed meant the first, and keep loading.
                named = ", ".join(f"'{value}@{index}'" for index in positions)
                self.warn(
                    node,
                    f"{what} '{value}' is ambiguous: it is tokens "
                    f"{', '.join(map(str, positions))} (numbered from 0), and the first is "
                    f"used; name one with its position: {named}",
                )
                return positions[0]
            if positions:
                return positions[0]
            at = _POSITIONED.match(value)
            if at is not None:  # 'the@3': a repeated token, named with its position
                return self.positioned(node, what, at.group(1), int(at.group(2)), tokens)
            source = source_tokens(tokens) or ()  # a second sequence's tokens name its positions
            if value in source:
                return source.index(value)
            known = (*tokens, *source)
            default = getattr(tokens, "default_source", None)
            note = ""
            if default is not None:
                note = (
                    f" (the lesson gives no source, so the default source '{default}', "
                    f"'{' '.join(source)}', was used; give one with a 'source:' section in "
                    "the inputs)"
                )
            self.problem(
                node,
                f"{what} '{value}' is not one of the tokens{did_you_mean(value, known)}; "
                f"tokens: {' '.join(tokens)}"
                + (f"; source: {' '.join(source)}" if source else "")
                + note,
            )
            return None
        self.problem(node, f"{what} must be a token or a 0-based index, not {_kind(node)}")
        return None

    def positioned(
        self, node: yaml.Node, what: str, token: str, position: int, tokens: tuple[str, ...]
    ) -> int | None:
        """``token@position``: the token at that 0-based position of the main sequence
        (or, for a word only the source has, of the source), checked to be that token."""
        source = source_tokens(tokens) or ()
        sequence, which = tokens, "tokens"
        if token not in tokens and token in source:
            sequence, which = source, "source tokens"
        if token not in sequence:
            return self.index(
                yaml.ScalarNode(_STR, token, node.start_mark, node.end_mark), what, tokens
            )
        if not 0 <= position < len(sequence) or sequence[position] != token:
            places = [str(i) for i, t in enumerate(sequence) if t == token]
            found = f"'{sequence[position]}'" if 0 <= position < len(sequence) else "out of range"
            self.problem(
                node,
                f"{what} '{token}@{position}': {which[:-1]} {position} is {found}, not '{token}'; "
                f"'{token}' is at {', '.join(places)} (numbered from 0)",
            )
            return None
        return position

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
        if "plugins" in entries:
            self.needed_plugins(entries["plugins"][1])
        options = self.options(entries, self.base_options(), shared=True)
        scope = _Scope(options)
        if "defaults" in entries:
            scope = self.defaults(entries["defaults"][1], scope)
        if "values" in entries and self.fatal is None:
            self.named_values(entries["values"][1], scope)
        steps: list[LessonStep] = []
        if "steps" in entries and self.fatal is None:
            node = entries["steps"][1]
            if not isinstance(node, yaml.SequenceNode):
                self.problem(node, f"steps must be a list, not {_kind(node)}")
            elif not node.value:
                self.problem(node, "steps is empty; a lesson needs at least one step")
            else:
                section = scope
                for number, item in enumerate(node.value, start=1):
                    if _is_defaults(item):
                        # '- defaults: ...' starts a section: its settings replace the previous
                        # section's, over the lesson's own.
                        section = self.defaults(item.value[0][1], scope, item)
                        if self.fatal is not None:
                            break
                        continue
                    step = self.step(item, number, section)
                    if step is not None:
                        steps.append(step)
                self.unique_ids(node)
        self.unused_shared_options()
        options = self.lesson_inputs(options, steps)
        lesson = Lesson(
            title=title or "",
            summary=summary or "",
            options=options,
            steps=tuple(steps),
            path=Path(self.path),
            name=name,
            values=tuple(self.values.values()),
            typed_numbers=tuple(self.typed),
            markup=tuple(self.markup),
            warnings=tuple(self.warnings),
        )
        self.partial = lesson
        if self.problems or title is None or summary is None:
            return None
        return lesson

    def unique_ids(self, steps: yaml.SequenceNode) -> None:
        """Quiz ids name a learner's progress, so two quizzes may not share one.

        Read from the YAML, so a quiz with other problems still has its id checked."""
        seen: dict[str, int] = {}
        for item in steps.value:
            if not isinstance(item, yaml.MappingNode):
                continue
            for key, body in item.value:
                if not (isinstance(key, yaml.ScalarNode) and key.value == "quiz"):
                    continue
                if not isinstance(body, yaml.MappingNode):
                    continue
                for id_key, id_node in body.value:
                    if not (isinstance(id_key, yaml.ScalarNode) and id_key.value == "id"):
                        continue
                    if not isinstance(id_node, yaml.ScalarNode):
                        continue
                    quiz_id = str(id_node.value)
                    line = key.start_mark.line + 1
                    if quiz_id in seen:
                        self.problem(
                            id_node,
                            f"quiz id '{quiz_id}' is already used by the quiz at line "
                            f"{seen[quiz_id]}",
                        )
                    else:
                        seen[quiz_id] = line

    def defaults(self, node: yaml.Node, scope: _Scope, item: yaml.Node | None = None) -> _Scope:
        """``defaults:``: a variant, a query and options the following steps may leave out."""
        if item is not None and len(getattr(item, "value", ())) > 1:
            self.problem(item.value[1][0], "'defaults' stands alone; start a new step with '- '")
        entries = self.mapping(node, "'defaults'", DEFAULT_KEYS)
        if entries is None:
            return scope
        options = self.options(entries, scope.options, shared=True)
        variant = scope.variant
        if "variant" in entries:
            before = len(self.problems)
            named = self.variant(entries["variant"][1])
            if named is None:
                self.stop_at(before, "the steps are not checked until it is available")
            variant = named or variant
        query = scope.query
        if "query" in entries:
            query = self.query(entries["query"][1], options.inputs.tokens if options.inputs else ())
        return _Scope(options, variant, query)

    def needed_plugins(self, node: yaml.Node) -> None:
        """``plugins:``: the plugins whose variants the lesson uses, each checked installed."""
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        installed = {record.name for record in self.host.plugins if not record.error}
        for item in items:
            name = self.text(item, "a plugin")
            if name is None or name in installed:
                continue
            self.missing_plugins.append(name)
            before = len(self.problems)
            failed = [r for r in self.host.failures if r.name == name]
            if failed:
                self.problem(item, f"plugin '{name}' failed to load: {failed[0].error}")
            else:
                self.problem(
                    item,
                    f"this lesson needs the plugin '{name}', which is not installed "
                    "(install it, or give its folder with --plugins-dir); "
                    f"installed: {', '.join(sorted(installed)) or 'none'}",
                )
            self.stop_at(before, "the steps are not checked until it is installed")

    def declared_options(self) -> list[str]:
        """Every option an installed variant declares, other than the shared ones."""
        names = {o.name for v in self.host.variants.values() for o in v.options}
        return sorted(names - set(OPTION_KEYS))

    def query(self, node: yaml.Node, tokens: tuple[str, ...]) -> int | None:
        """A query token or index; an empty value (``query: ~``) means every query."""
        if isinstance(node, yaml.ScalarNode) and node.tag == _NULL:
            return None
        return self.index(node, "query", tokens)

    def named_values(self, node: yaml.Node, scope: _Scope) -> None:
        """``values:``: live numbers prose embeds as ``{{name}}``."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(
                node, f"values must be a mapping of names to computed values, not {_kind(node)}"
            )
            return
        for key_node, value_node in node.value:
            name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else ""
            if not VALUE_NAME.match(name) or name == ANSWER:
                self.problem(
                    key_node,
                    f"'{name}' cannot name a value: use letters, digits, '_' and '-', starting "
                    f"with a letter (and not '{ANSWER}', which is a quiz's own answer)",
                )
                continue
            self.value_names.add(name)
            if not isinstance(value_node, yaml.MappingNode):
                self.problem(
                    value_node,
                    f"value '{name}' must be a mapping naming a computed value "
                    f"(variant, stage, cell), not {_kind(value_node)}",
                )
                continue
            ref = self.answer_ref(value_node, scope, f"value '{name}'")
            if ref is not None:
                line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
                self.values[name] = NamedValue(name, ref, line, column)

    def unused_shared_options(self) -> None:
        reported: set[str] = set()
        for value in self.shared_values:
            if value.name in self.used_options or value.name in reported:
                continue
            if value.name in LEGACY_OPTIONS:
                continue  # heads was always accepted lesson-wide, whichever variants follow
            reported.add(value.name)
            known = sorted(
                {o.name for v in self.used_variants for o in self.host.variants[v].options}
            )
            variants = ", ".join(sorted(self.used_variants)) or "none"
            self.problem_at(
                value.line, value.column,
                f"no variant in this lesson has an option '{value.name}'"
                f"{did_you_mean(value.name, known)}; the lesson uses {variants}, whose options "
                f"are {', '.join(known) or 'none'}",
            )  # fmt: skip

    def base_options(self) -> Options:
        from tracer.tracing.runner import DEFAULT_INIT, DEFAULT_SEED

        return Options(
            inputs=self.default_inputs, seed=DEFAULT_SEED, init=DEFAULT_INIT, dropout=0.0
        )

    def own_inputs(self, variant: str, options: Options) -> Options:
        """``options`` with the variant's own inputs (``Variant(inputs=...)``) when the lesson
        names none, as ``attn trace`` uses them; the default inputs otherwise."""
        own = self.host.variants[variant].inputs
        if options.inputs is self.default_inputs and own is not None:
            return replace(options, inputs=own)
        return options

    def lesson_inputs(self, options: Options, steps: Sequence[LessonStep]) -> Options:
        """The lesson's inputs: when it names none and every step runs on one variant's own
        inputs (an induction lesson), those, so what says "the lesson's inputs" names them."""
        if options.inputs is not self.default_inputs:
            return options
        used: dict[int, InputSet] = {}
        for step in steps:
            refs = [*step.tables(), step.reported_at]
            # A loop names its options itself: it shows no TensorRef.
            own = getattr(step, "options", None)
            for given in [r.options for r in refs if r is not None] + ([own] if own else []):
                if given.inputs is not None:
                    used[id(given.inputs)] = given.inputs
        if len(used) == 1:
            (only,) = used.values()
            if only is not self.default_inputs:
                return replace(options, inputs=only)
        return options

    def named_input_sets(self) -> dict[str, InputSet]:
        """Input sets the installed variants bring (their own inputs and default sources),
        by name: a lesson may name them as it names a built-in set."""
        found: dict[str, InputSet] = {}
        for variant in self.host.variants.values():
            for given in (variant.inputs, variant.default_source):
                if isinstance(given, InputSet):
                    found.setdefault(given.name, given)
        return found

    def options(
        self,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        base: Options,
        *,
        shared: bool = False,
    ) -> Options:
        """``inputs`` and ``options`` from a mapping's entries, over ``base``.

        Names other than the shared ones are the variant's own options, kept as
        written; :meth:`variant_options` checks them once the variant is known.
        ``shared``: lesson-wide (or section) options, which apply only to the
        variants that declare them.
        """
        before = len(self.problems)
        inputs = self.inputs(entries["inputs"][1]) if "inputs" in entries else None
        if shared and "inputs" in entries and inputs is None:
            self.stop_at(before, "the steps are not checked until the inputs can be read")
        seed = init = d_out = dropout = None
        values: list[OptionValue] = []
        if "options" in entries:
            node = entries["options"][1]
            fields = self.mapping(node, "options", None) or {}
            declared = self.declared_options()
            for name, (key_node, value_node) in fields.items():
                if name in TRACE_KEYS:
                    continue
                if name not in declared and name not in LEGACY_OPTIONS:
                    # No installed variant has it: a slip, reported where it is written.
                    self.problem(
                        key_node, f"unknown key '{name}' in options"
                        f"{did_you_mean(name, (*OPTION_KEYS, *declared))}; expected "
                        f"{', '.join(OPTION_KEYS)}, or an option a variant declares"
                        f"{' (' + ', '.join(declared) + ')' if declared else ''}",
                    )  # fmt: skip
                    continue
                if name in LEGACY_OPTIONS:
                    # Every variant may be passed it (heads): read and bounded by its legacy
                    # declaration now, as written; a variant that declares it checks it again.
                    value = self.legacy_option(value_node, name)
                else:
                    value = _scalar(value_node)
                    if not isinstance(value_node, yaml.ScalarNode) or value is None:
                        self.problem(
                            value_node, f"option '{name}' must be a number, true/false or "
                            f"text, not {_kind(value_node)}",
                        )  # fmt: skip
                        continue
                if value is None:
                    continue
                line, column = value_node.start_mark.line + 1, value_node.start_mark.column + 1
                option_value = OptionValue(name, value, line, column)
                values.append(option_value)
                if shared:
                    self.shared_values.append(option_value)
            # The trace options: read as their type here, then checked by the one validator
            # the command line uses too, and reported at the value in the lesson's own words.
            if "seed" in fields:
                seed = self.trace_option(fields["seed"][1], "seed", self.integer)
            if "init" in fields:
                init = self.trace_option(fields["init"][1], "init", self.text)
            if "d_out" in fields:
                d_out = self.trace_option(fields["d_out"][1], "d_out", self.integer)
            if "dropout" in fields:
                dropout = self.trace_option(fields["dropout"][1], "dropout", self.number)
        merged = Options(inputs, seed, init, d_out, dropout, values=tuple(values)).over(base)
        explicit = merged.inputs.d_out if merged.inputs is not None else None
        if explicit is not None and merged.d_out not in (None, explicit) and "options" in entries:
            self.problem(
                entries["options"][1],
                f"d_out {merged.d_out} disagrees with the weights of the inputs, "
                f"which have d_out = {explicit}",
            )
        return merged

    def trace_option(
        self, node: yaml.Node, name: str, read: Callable[[yaml.Node, str], _T | None]
    ) -> _T | None:
        """A trace option (seed, init, d_out, dropout) checked by
        :func:`tracer.options.check_trace_option`, or None after reporting it at ``node``."""
        from tracer.errors import UsageError
        from tracer.options import check_trace_option

        value = read(node, name)
        if value is None:
            return None
        try:
            check_trace_option(name, value, name)
        except UsageError as error:
            self.problem(node, error.message)
            return None
        return value

    def legacy_option(self, node: yaml.Node, name: str) -> object | None:
        """An option every variant may be passed (``heads``), as its type within the bounds of
        :func:`tracer.options.legacy_option`, or None after reporting it at ``node``."""
        from tracer.errors import UsageError
        from tracer.options import convert, legacy_option

        option = legacy_option(name)
        value: object | None = (
            self.integer(node, name) if option.type is int else self.number(node, name)
        )
        if value is None:
            return None
        try:
            converted: object = convert(option, value, name)
            return converted
        except UsageError as error:
            self.problem(node, error.message)
            return None

    def tokenized(self, input_set: InputSet | None, node: yaml.Node) -> InputSet | None:
        """Inputs that give ``text:``, split by the tokenizer of the variant that reads text
        (``model``) with its default options, so steps can name its tokens; each run splits
        the text again with the step's own options."""
        if input_set is None or input_set.text is None or input_set.tokens:
            return input_set
        from tracer.errors import TracerError
        from tracer.options import check_options
        from tracer.tracing.runner import tokenized

        readers = [v for v in self.host.variants.values() if v.tokenize is not None]
        if not readers:
            self.problem(node, "text: needs a variant with its own tokenizer (such as 'model')")
            return None
        try:
            return tokenized(input_set, readers[0], check_options(readers[0], {}))
        except TracerError as error:
            self.problem(node, error.message)
            return None

    def inputs(self, node: yaml.Node) -> InputSet | None:
        from tracer.inputs import load_inputs

        if isinstance(node, yaml.MappingNode):
            input_set, problems = parse_input_node(node, self.path, name="inline")
            self.problems.extend(problems)
            return self.tokenized(input_set, node)
        spec = self.text(node, "inputs")
        if spec is None:
            return None
        from tracer.inputs.builtin import BUILTIN_INPUTS

        brought = self.named_input_sets()
        if spec not in BUILTIN_INPUTS and spec in brought:
            return brought[spec]
        if spec not in BUILTIN_INPUTS:
            candidate = self.base_dir / spec
            looks_like_file = Path(spec).suffix.lower() in (".yaml", ".yml", ".json") or "/" in spec
            if not looks_like_file:
                named = sorted({*BUILTIN_INPUTS, *brought})
                self.problem(
                    node,
                    f"unknown input set '{spec}'{did_you_mean(spec, named)}; "
                    f"built-in sets: {', '.join(sorted(BUILTIN_INPUTS))}"
                    + (f"; the variants' own: {', '.join(sorted(brought))}" if brought else "")
                    + ", or give a .yaml/.json file",
                )
                return None
            if not candidate.is_file():
                self.problem(node, f"inputs file not found: {candidate}")
                return None
            spec = str(candidate)
        try:
            return self.tokenized(load_inputs(spec), node)
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
            text = self.prose(body, "narration")
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

    def _tokens(self, ref: TensorRef) -> tuple[str, ...]:
        """Tokens a ``cell``/``focus`` of ``ref`` may name, with those of the source it reads."""
        assert ref.options.inputs is not None
        return _tokens(ref.options.inputs, self.host.variants.get(ref.variant))

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
        if "variant" in entries:
            variant = self.variant(entries["variant"][1])
            ok = ok and variant is not None
        elif scope.variant is not None:
            variant = scope.variant
        else:
            self.problem(node, f"{what} needs a 'variant' (or set one in 'defaults')")
            ok = False
        if variant is not None:
            options = self.own_inputs(variant, self.variant_options(variant, options, entries))
        tokens = options.inputs.tokens if options.inputs is not None else scope.tokens
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
        query = scope.query if scope.query is not None and scope.query < len(tokens) else None
        if "query" in entries:
            query = self.query(entries["query"][1], tokens)
            ok = ok and (query is not None or _is_null(entries["query"][1]))
        then: tuple[Operation, ...] = ()
        if "then" in entries:
            operations = self.operations(entries["then"][1], tokens, entries, scope)
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
            tensor_at=_at(entries["tensor"][1]) if "tensor" in entries else None,
        )

    def variant_options(
        self, variant: str, options: Options, entries: dict[str, tuple[yaml.Node, yaml.Node]]
    ) -> Options:
        """``options`` for ``variant``: its declared options checked and converted.

        An option the variant does not declare is a problem where the step sets it,
        and skipped where it comes from the lesson's or a section's options.
        """
        from tracer.options import convert, option_for

        self.used_variants.add(variant)
        found = self.host.variants[variant]
        declared = [option.name for option in found.options]
        shared = {id(value) for value in self.shared_values}
        resolved: list[OptionValue] = []
        for value in options.values:
            option = option_for(found, value.name)
            if option is None and value.name in LEGACY_OPTIONS:
                continue  # a variant with options of its own but not heads: not for it
            if option is None:
                if id(value) not in shared:
                    takes = f"it takes {', '.join(declared)}" if declared else "it takes no options"
                    self.problem_at(
                        value.line, value.column,
                        f"variant '{variant}' has no option '{value.name}'"
                        f"{did_you_mean(value.name, declared)}; {takes}",
                    )  # fmt: skip
                continue
            self.used_options.add(value.name)
            try:
                converted = convert(option, value.value, f"option '{value.name}'", variant)
            except UsageError as error:
                self.problem_at(value.line, value.column, error.message)
                continue
            resolved.append(replace(value, value=converted))
        return replace(options, values=tuple(resolved), heads=None)  # heads follows values

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
                hint = did_you_mean(name, self.host.variants)
                if self.missing_plugins:
                    missing = ", ".join(self.missing_plugins)
                    hint = (
                        f"; it probably comes from a plugin this lesson needs that is not "
                        f"installed: {missing}"
                    )
                elif not hint:
                    hint = (
                        "; if it comes from a plugin, that plugin is not installed "
                        "(install it, or give its folder with --plugins-dir)"
                    )
                self.problem(node, f"unknown variant '{name}'{hint}; known variants: {known}")
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

    def operations(
        self,
        node: yaml.Node,
        tokens: tuple[str, ...],
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
    ) -> tuple[Operation, ...] | None:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        found: list[Operation] = []
        ok = True
        for item in items:
            operation = self.operation(item, tokens, entries, scope)
            ok = ok and operation is not None
            if operation is not None:
                found.append(operation)
        return tuple(found) if ok else None

    def operation(
        self,
        node: yaml.Node,
        tokens: tuple[str, ...],
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
    ) -> Operation | None:
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
        line, column = node.start_mark.line + 1, node.start_mark.column + 1

        def make(argument: float | int | bool | str | TensorRef) -> Operation:
            return Operation(name, argument, line, column)

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
            return make(True)
        if value_node is None:
            if name in REDUCTIONS and name != "sum":
                return make(True)  # over the whole tensor
            self.problem(node, f"'{name}' needs a value: {OPERATIONS[name]}")
            return None
        if name == "pick":
            negative = _scalar(value_node)
            if isinstance(negative, int) and not isinstance(negative, bool) and negative < 0:
                return make(negative)  # refused when run, with the range of the table it picks from
            index = self.index(value_node, "pick", tokens, size=1 << 30)
            return make(index) if index is not None else None
        if name == "scale":
            factor = self.number(value_node, "scale")
            return make(factor) if factor is not None else None
        if name in BINARY_OPERATIONS:
            if isinstance(value_node, yaml.MappingNode):
                # The other tensor: named like an answer, the same variant and query by default.
                inherited = {k: v for k, v in entries.items() if k in ("variant", "query")}
                other = self.mapping(value_node, f"'{name}'", ANSWER_KEYS)
                if other is None:
                    return None
                ref = self.cell_ref(value_node, {**inherited, **other}, scope, f"'{name}'")
                return make(ref) if ref is not None else None
            number = _scalar(value_node)
            if name == "divide" and isinstance(number, (int, float)) and number == 0:
                self.problem(value_node, "'divide' by 0 has no value; divide by another number")
                return None
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                return make(float(number))
            self.problem(
                value_node,
                f"'{name}' takes a number or a mapping naming a tensor (stage, tensor...), "
                f"not {_kind(value_node)}",
            )
            return None
        if name == "compare":
            scalar = _scalar(value_node) if isinstance(value_node, yaml.ScalarNode) else None
            comparison = _comparison(str(scalar)) if isinstance(scalar, str) else None
            if comparison is None:
                self.problem(
                    value_node,
                    "'compare' takes an operator and a number, like '> 0' or '== 0', "
                    f"not {_kind(value_node)}; operators: {' '.join(COMPARISONS)}",
                )
                return None
            return make(comparison)
        dim = self.integer(value_node, f"the dimension of '{name}'")
        return make(dim) if dim is not None else None

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
            tokens = self._tokens(ref) if ref and ref.options.inputs else scope.tokens
            focus = self.focus(entries["focus"][1], tokens)
        caption = self.caption(entries)
        if ref is None or caption is None or ("focus" in entries and focus is None):
            return None
        return Show(ref, focus, caption, line, column)

    def caption(self, entries: dict[str, tuple[yaml.Node, yaml.Node]]) -> str | None:
        if "caption" not in entries:
            return ""
        return self.prose(entries["caption"][1], "caption")

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
        if "variant" in entries:
            variant = self.variant(entries["variant"][1])
        elif scope.variant is not None:
            variant = scope.variant
        else:
            self.problem(node, "'loop' needs a 'variant' (or set one in 'defaults')")
            ok = False
        if variant is not None:
            options = self.own_inputs(variant, self.variant_options(variant, options, entries))
        tokens = options.inputs.tokens if options.inputs is not None else scope.tokens
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
        query = scope.query if scope.query is not None and scope.query < len(tokens) else None
        if "query" in entries:
            query = self.query(entries["query"][1], tokens)
            ok = ok and (query is not None or _is_null(entries["query"][1]))
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
        side_scope = _Scope(self.options(entries, scope.options), scope.variant, scope.query)
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
            if label is not None and "{{" in label:
                where = self.locate(side_entries["label"][1], "{{")
                self.problem_at(
                    *where,
                    "a label is shown as written: live values ({{name}}) are filled in only in "
                    "narration, captions and quizzes; put the value in the caption",
                )
                label = None
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
        question = (
            self.prose(entries["question"][1], "question", quiz=True)
            if "question" in entries
            else None
        )
        explanation = (
            self.prose(entries["explanation"][1], "explanation", quiz=True, answer_ok=True)
            if "explanation" in entries
            else ""
        )
        quiz_id = self.text(entries["id"][1], "id") if "id" in entries else None
        hints = self.hints(entries["hints"][1]) if "hints" in entries else ()
        choices: tuple[str, ...] = ()
        if "choices" in entries:
            choices = self.choices(entries["choices"][1])
        shown: TensorRef | None = None
        if "show" in entries:
            shown = self.cells_ref(entries["show"][1], scope, "show")
        cells: TensorRef | None = None
        if "cells" in entries:
            cells = self.cells_ref(entries["cells"][1], scope)
            if "choices" in entries:
                self.problem(entries["cells"][0], "a quiz has 'choices' or 'cells', not both")
        numeric = "choices" not in entries and "cells" not in entries
        tolerance, relative = DEFAULT_TOLERANCE, False
        if "tolerance" in entries:
            if not numeric:
                self.problem(
                    entries["tolerance"][0],
                    "tolerance is for number quizzes; a quiz with choices or cells has none",
                )
            else:
                tolerance, relative = self.tolerance(entries["tolerance"][1])
        kind: QuizKind = "number"
        answer: float | int | TensorRef | tuple[int, ...] | None = None
        if "answer" in entries:
            answer_node = entries["answer"][1]
            if "cells" in entries:
                kind = "cells"
                if isinstance(answer_node, yaml.MappingNode):
                    answer = self.answer_ref(answer_node, scope, "answer", cell_ok=False)
                else:
                    self.problem(
                        answer_node,
                        "the answer of a 'cells' quiz names a computed tensor of the same "
                        "shape (variant, stage, then...) whose non-zero cells are right, "
                        f"not {_kind(answer_node)}",
                    )
            elif "choices" in entries:
                kind = "choice"
                if isinstance(answer_node, yaml.SequenceNode):
                    kind = "multiple"
                    answer = self.multiple_answer(answer_node, choices)
                elif isinstance(answer_node, yaml.MappingNode):
                    # A computed token index (e.g. argmax): the right choice is that token.
                    answer = self.answer_ref(answer_node, scope, "answer")
                else:
                    picked = self.text(answer_node, "answer")
                    if picked is not None and choices:
                        if picked in choices:
                            answer = choices.index(picked)
                        else:
                            self.problem(
                                answer_node,
                                f"answer '{picked}' is not one of the choices"
                                f"{did_you_mean(picked, choices)}; choices: {_quoted(choices)}",
                            )
            elif isinstance(answer_node, yaml.MappingNode):
                answer = self.answer_ref(answer_node, scope, "answer")
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
        if question is None or answer is None or explanation is None or hints is None:
            return None
        if "choices" in entries and not choices:
            return None
        return Quiz(
            question=question,
            quiz_kind=kind,
            answer=answer,
            choices=choices,
            tolerance=tolerance if numeric else 0.0,
            explanation=explanation,
            id=quiz_id,
            line=line,
            column=column,
            hints=hints,
            relative=relative,
            cells=cells,
            shown=shown,
        )

    def choices(self, node: yaml.Node) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            self.problem(node, f"choices must be a list, not {_kind(node)}")
            return ()
        if len(node.value) < 2:
            count = len(node.value)
            self.problem(node, f"choices needs at least two options; it has {count}")
            return ()
        texts = [self.prose(item, "a choice", quiz=True) for item in node.value]
        for position, item in enumerate(node.value):
            if texts[position] is not None and texts.index(texts[position]) < position:
                self.problem(item, f"choice '{texts[position]}' appears twice")
        if any(t is None for t in texts):
            return ()
        return tuple(t for t in texts if t is not None)

    def multiple_answer(
        self, node: yaml.SequenceNode, choices: tuple[str, ...]
    ) -> tuple[int, ...] | None:
        """Every right choice of a multiple-choice quiz, as indices."""
        if not node.value:
            self.problem(node, "answer is empty; list every right choice")
            return None
        picked: list[int] = []
        ok = True
        for item in node.value:
            text = self.text(item, "answer")
            if text is None:
                ok = False
            elif text not in choices:
                if choices:
                    self.problem(
                        item,
                        f"answer '{text}' is not one of the choices{did_you_mean(text, choices)}"
                        f"; choices: {_quoted(choices)}",
                    )
                ok = False
            elif choices.index(text) in picked:
                self.problem(item, f"answer '{text}' is listed twice")
                ok = False
            else:
                picked.append(choices.index(text))
        return tuple(sorted(picked)) if ok else None

    def hints(self, node: yaml.Node) -> tuple[str, ...] | None:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        if not items:
            self.problem(node, "hints is empty; give at least one hint, or leave 'hints' out")
            return None
        if isinstance(node, yaml.SequenceNode) and node.flow_style:
            given = {id(item) for item in items}
            items = _rejoined_sentences(items)
            for item in items:
                if id(item) not in given:  # a sentence YAML split at its comma, read as one
                    self.warn(
                        item,
                        f"in a [ ] list a comma starts a new item, so YAML splits "
                        f"'{_short_text(str(item.value))}' into two hints; it is read as one "
                        "hint: quote it, or write each hint on its own '- ' line",
                    )
        texts = [self.prose(item, "a hint", quiz=True) for item in items]
        if any(t is None for t in texts):
            return None
        return tuple(t for t in texts if t is not None)

    def tolerance(self, node: yaml.Node) -> tuple[float, bool]:
        """An absolute tolerance (``0.005``) or a relative one (``1%``)."""
        value = _scalar(node)
        if isinstance(value, str) and value.strip().endswith("%"):
            try:
                percent = float(value.strip()[:-1])
            except ValueError:
                percent = -1.0
            if not 0 <= percent < 100:
                self.problem(
                    node, f"a relative tolerance is a percentage from 0% to 99%, not '{value}'"
                )
                return DEFAULT_TOLERANCE, False
            return percent / 100, True
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(
                node, f"tolerance must be a number (0.005) or a percentage (1%), not {_kind(node)}"
            )
            return DEFAULT_TOLERANCE, False
        number = self.number(node, "tolerance")
        if number is None:
            return DEFAULT_TOLERANCE, False
        if number < 0:
            self.problem(node, f"tolerance must not be negative, got {number:g}")
            return DEFAULT_TOLERANCE, False
        return number, False

    def cells_ref(self, node: yaml.Node, scope: _Scope, what: str = "cells") -> TensorRef | None:
        """A tensor a quiz shows: the one whose cells are selected, or one shown with it."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(
                node,
                f"{what} must name a tensor (variant, stage, tensor), not {_kind(node)}",
            )
            return None
        entries = self.mapping(node, what, REF_KEYS)
        if entries is None:
            return None
        return self.ref(node, entries, scope, what)

    def answer_ref(
        self, node: yaml.MappingNode, scope: _Scope, what: str, *, cell_ok: bool = True
    ) -> TensorRef | None:
        entries = self.mapping(node, what, ANSWER_KEYS if cell_ok else REF_KEYS)
        if entries is None:
            return None
        return self.cell_ref(node, entries, scope, what)

    def cell_ref(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        what: str,
    ) -> TensorRef | None:
        """A :class:`TensorRef` with an optional ``cell`` picking one value."""
        ref = self.ref(node, entries, scope, what)
        cell: tuple[int, ...] | None = None
        cell_at: tuple[tuple[int, int], ...] = ()
        names: tuple[str, ...] = ()
        if "cell" in entries:
            tokens = self._tokens(ref) if ref and ref.options.inputs else scope.tokens
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
                names = tuple(_named_token(item) for item in cell_node.value)
                cell_at = tuple(
                    (item.start_mark.line + 1, item.start_mark.column + 1)
                    for item in cell_node.value
                )
            else:
                index = self.index(cell_node, "cell index", tokens, size=1 << 30)
                if index is None:
                    return None
                cell = (index,)
                names = (_named_token(cell_node),)
                cell_at = ((cell_node.start_mark.line + 1, cell_node.start_mark.column + 1),)
        if ref is None:
            return None
        return replace(ref, cell=cell, cell_at=cell_at, cell_names=names)

    def checkpoint(self, node: yaml.Node, line: int, column: int) -> Checkpoint | None:
        if isinstance(node, yaml.SequenceNode):
            points = [self.prose(item, "a checkpoint point") for item in node.value]
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
        texts = [self.prose(item, "a checkpoint point") for item in points_node.value]
        if title is None or any(t is None for t in texts):
            return None
        return Checkpoint(title, tuple(t for t in texts if t is not None), line, column)


# Scalars ---------------------------------------------------------------------


def _at(node: yaml.Node) -> tuple[int, int]:
    """Where ``node`` is written: (line, column), from 1."""
    return node.start_mark.line + 1, node.start_mark.column + 1


def _short_text(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _rejoined_sentences(items: list[yaml.Node]) -> list[yaml.Node]:
    """``hints: [Multiply …, then add.]``: YAML reads a comma in a flow list as a new item,
    so a sentence with a comma became two hints. An unquoted item that starts in lower case
    after one that starts a sentence (a capital) and does not end it (., ?, !, :, ;)
    continues that sentence: the two are one hint, with the text between them as written.
    Quoted items, and lists of lower-case fragments (``[first hint, second hint]``), are
    kept as they are."""
    joined: list[yaml.Node] = []
    for item in items:
        previous = joined[-1] if joined else None
        if (
            isinstance(previous, yaml.ScalarNode)
            and isinstance(item, yaml.ScalarNode)
            and previous.style is None
            and item.style is None
            and str(previous.value)[:1].isupper()
            and str(item.value)[:1].islower()
            and not str(previous.value).rstrip().endswith((".", "?", "!", ":", ";"))
        ):
            buffer = getattr(previous.start_mark, "buffer", None)
            between = (
                buffer[previous.end_mark.index : item.start_mark.index]
                if isinstance(buffer, str)
                else ", "
            )
            text = f"{previous.value}{between}{item.value}"
            joined[-1] = yaml.ScalarNode(
                previous.tag, text, previous.start_mark, item.end_mark, style=None
            )
            continue
        joined.append(item)
    return joined


def _comparison(text: str) -> str | None:
    """``'> 0'`` normalised, or None when it is not an operator and a finite number."""
    text = text.strip()
    for operator in COMPARISONS:
        if text.startswith(operator):
            try:
                number = float(text[len(operator) :].strip())
            except ValueError:
                return None
            finite = number == number and abs(number) != float("inf")
            return f"{operator} {number:g}" if finite else None
    return None


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL


def _is_defaults(node: yaml.Node) -> bool:
    """A steps item that is ``- defaults: ...`` rather than a step."""
    if not isinstance(node, yaml.MappingNode) or not node.value:
        return False
    key = node.value[0][0]
    return isinstance(key, yaml.ScalarNode) and key.value == "defaults"


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


def _keys(node: yaml.MappingNode) -> list[tuple[str, yaml.Node]]:
    return [(str(k.value), k) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]


def _closest(word: str, choices: Sequence[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def _quoted(texts: Sequence[str]) -> str:
    return ", ".join(f"'{text}'" for text in texts)


def _listing(names: Sequence[str] | dict[str, str]) -> str:
    return ", ".join(names)


def _named_token(node: yaml.Node) -> str:
    """A cell index as written: the token's name, or "" for a number."""
    value = _scalar(node)
    return value if isinstance(value, str) else ""


def _tokens(inputs: InputSet, variant: Variant | None = None) -> tuple[str, ...]:
    """The inputs' tokens, carrying a second sequence's (``source:``, or else the default
    source of a variant with ``source="required"``) for cells that name them."""
    from tracer.tracing.runner import default_source

    second = inputs.source_sequence
    if second is not None:
        return Tokens(inputs.tokens, second.tokens)
    if variant is not None and variant.source == "required":
        default = default_source(variant)
        return Tokens(inputs.tokens, default.tokens, default_source=default.name)
    return Tokens(inputs.tokens)
