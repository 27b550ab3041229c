"""The lesson itself: its top-level keys, ``defaults:`` sections, live values and the
steps, each handed to the reader of its kind (:data:`tracer.lessons.format.LESSON`)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tracer.lessons.format import DEFAULTS, LESSON, STEP_SHAPES
from tracer.lessons.grammar.base import Entries, _Scope
from tracer.lessons.grammar.checkpoint import CheckpointReader
from tracer.lessons.grammar.compare_step import CompareReader
from tracer.lessons.grammar.keys import LESSON_KEYS
from tracer.lessons.grammar.loop import LoopReader
from tracer.lessons.grammar.nodes import _closest, _is_defaults, _keys, _kind, _listing
from tracer.lessons.grammar.quiz import QuizReader
from tracer.lessons.grammar.show import ShowReader
from tracer.lessons.model import STEP_KINDS, Lesson, LessonStep, NamedValue, Narration
from tracer.lessons.prose import ANSWER, VALUE_NAME
from tracer.suggest import did_you_mean
from tracer.yamldoc import Problem


class Reader(ShowReader, LoopReader, CompareReader, QuizReader, CheckpointReader):
    """Reads a lesson's node tree into a :class:`~tracer.lessons.model.Lesson`.

    Walks the tree once, checking every key (with "did you mean"), every name against the
    plugins in its host, and every value, and resolves what the file refers to: tokens to
    indices, a step's variant and query from the ``defaults`` in force, the variant's own
    options, live values in prose. It collects every problem with its position instead of
    stopping at the first (``problems``); nothing is computed here."""

    def lesson(self, root: yaml.Node | None, name: str) -> Lesson | None:
        entries = self.top(root)
        if entries is None:
            return None
        title = self.field_text(LESSON, entries, "title")
        summary = self.field_text(LESSON, entries, "summary")
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
            steps = self.steps(entries["steps"][1], scope)
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

    def top(self, root: yaml.Node | None) -> Entries | None:
        """The lesson's own keys, each required one reported when missing; None when the
        document is not a lesson at all."""
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
        entries = self.mapping(root, LESSON.what, LESSON) or {}
        # "sumary: ..." already got "did you mean 'summary'"; saying it is missing adds nothing.
        misspelt = {_closest(key, LESSON_KEYS) for key, _ in _keys(root) if key not in LESSON_KEYS}
        self.require(root, LESSON, {*entries, *(m for m in misspelt if m)})
        return entries

    def steps(self, node: yaml.Node, scope: _Scope) -> list[LessonStep]:
        """``steps:``, each read in the section (``- defaults: ...``) it is in."""
        if not isinstance(node, yaml.SequenceNode):
            dashed = _dash_without_space(node)
            if dashed is not None:
                self.problem(
                    dashed, f"'{dashed.value}' needs a space after its '-' to be a step; "
                    f"write '- {dashed.value[1:].lstrip()}'",
                )  # fmt: skip
                return []
            self.problem(node, f"steps must be a list, not {_kind(node)}")
            return []
        if not node.value:
            self.problem(node, "steps is empty; a lesson needs at least one step")
            return []
        steps: list[LessonStep] = []
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
        return steps

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
        entries = self.mapping(node, DEFAULTS.what, DEFAULTS)
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

    def step(self, node: yaml.Node, number: int, scope: _Scope) -> LessonStep | None:
        what = f"step {number}"
        if not isinstance(node, yaml.MappingNode) or not node.value:
            self.problem(
                node,
                f"{what} must be a mapping with one of {_listing(STEP_KINDS)}, not {_kind(node)}",
            )
            return None
        found = self.step_kind(node, what)
        if found is None:
            return None
        kind, kind_node, body = found
        line, column = kind_node.start_mark.line + 1, kind_node.start_mark.column + 1
        if kind == "narration":
            text = self.prose(body, "narration")
            return Narration(text, line, column) if text is not None else None
        if kind == "checkpoint":
            return self.checkpoint(body, line, column)
        if kind == "quiz":
            return self.quiz(body, scope, line, column)
        shape = STEP_SHAPES[kind]
        entries = self.mapping(body, shape.what, shape)
        if entries is None:
            return None
        read = {"show": self.show, "loop": self.loop, "compare": self.compare}[kind]
        return read(body, entries, scope, line, column)

    def step_kind(
        self, node: yaml.MappingNode, what: str
    ) -> tuple[str, yaml.Node, yaml.Node] | None:
        """A step's kind, its key and its body; every other key beside it is reported."""
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
            if key_node is not kind_node:
                self.beside(key_node, kind, what)
        return kind, kind_node, body

    def beside(self, key_node: yaml.Node, kind: str, what: str) -> None:
        """A key written beside a step's kind rather than inside it."""
        key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
        if key in STEP_KINDS:
            self.problem(
                key_node,
                f"{what} has two kinds, '{kind}' and '{key}'; start a new step with '- {key}:'",
            )
        elif key in STEP_SHAPES[kind].keys:
            self.problem(key_node, f"'{key}' belongs inside '{kind}': indent it under '{kind}:'")
        else:
            self.problem(key_node, f"unknown key '{key}' beside '{kind}' in {what}")


def _dash_without_space(node: yaml.Node) -> yaml.ScalarNode | None:
    """The first key of ``steps:`` written ``-narration:`` (no space: a key, not a step)."""
    if isinstance(node, yaml.MappingNode) and node.value:
        key = node.value[0][0]
        if isinstance(key, yaml.ScalarNode) and str(key.value).startswith("-"):
            return key
    return None
