"""The ``quiz`` step: a number, one choice, several choices or cells to select, with hints
and an explanation (:data:`tracer.lessons.format.QUIZ`)."""

from __future__ import annotations

import yaml

from tracer.lessons.format import DEFAULT_TOLERANCE, QUIZ
from tracer.lessons.grammar.base import Entries, _Scope
from tracer.lessons.grammar.nodes import (
    _kind,
    _quoted,
    _rejoined_sentences,
    _scalar,
    _short_text,
)
from tracer.lessons.grammar.refs import RefReader
from tracer.lessons.model import Quiz, QuizKind, TensorRef
from tracer.suggest import did_you_mean
from tracer.yamldoc import Problem

Answer = float | int | TensorRef | tuple[int, ...]
"""What a quiz's answer is read as (see :class:`~tracer.lessons.model.Quiz`)."""


class QuizReader(RefReader):
    """Reading ``quiz`` steps."""

    def quiz(self, node: yaml.Node, scope: _Scope, line: int, column: int) -> Quiz | None:
        entries = self.mapping(node, QUIZ.what, QUIZ)
        if entries is None:
            return None
        self.require(node, QUIZ, entries)
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
        quiz_id = self.field_text(QUIZ, entries, "id")
        hints = self.hints(entries["hints"][1]) if "hints" in entries else ()
        choices = self.choices(entries["choices"][1]) if "choices" in entries else ()
        shown, cells = self.quiz_tables(entries, scope)
        numeric = "choices" not in entries and "cells" not in entries
        tolerance, relative = self.quiz_tolerance(entries, numeric)
        kind, answer = self.quiz_answer(entries, choices, scope)
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

    def quiz_tables(
        self, entries: Entries, scope: _Scope
    ) -> tuple[TensorRef | None, TensorRef | None]:
        """The tensor shown with the question (``show``) and the one whose cells are
        selected (``cells``)."""
        shown = self.cells_ref(entries["show"][1], scope, "show") if "show" in entries else None
        cells: TensorRef | None = None
        if "cells" in entries:
            cells = self.cells_ref(entries["cells"][1], scope)
            if "choices" in entries:
                self.problem(entries["cells"][0], "a quiz has 'choices' or 'cells', not both")
        return shown, cells

    def quiz_tolerance(self, entries: Entries, numeric: bool) -> tuple[float, bool]:
        """The tolerance of a number quiz (the default when none is given); any other quiz
        has none."""
        if "tolerance" not in entries:
            return DEFAULT_TOLERANCE, False
        if not numeric:
            self.problem(
                entries["tolerance"][0],
                "tolerance is for number quizzes; a quiz with choices or cells has none",
            )
            return DEFAULT_TOLERANCE, False
        return self.tolerance(entries["tolerance"][1])

    def quiz_answer(
        self, entries: Entries, choices: tuple[str, ...], scope: _Scope
    ) -> tuple[QuizKind, Answer | None]:
        """The quiz's kind, decided by its keys, and its answer read as that kind asks."""
        if "cells" in entries:
            return "cells", self.cells_answer(entries, scope)
        if "choices" in entries:
            return self.choice_answer(entries, choices, scope)
        if "answer" not in entries:
            return "number", None
        answer_node = entries["answer"][1]
        if isinstance(answer_node, yaml.MappingNode):
            return "number", self.answer_ref(answer_node, scope, "answer")
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
        return "number", answer

    def cells_answer(self, entries: Entries, scope: _Scope) -> TensorRef | None:
        """A 'cells' quiz's answer: a computed tensor whose non-zero cells are right."""
        if "answer" not in entries:
            return None
        answer_node = entries["answer"][1]
        if isinstance(answer_node, yaml.MappingNode):
            return self.answer_ref(answer_node, scope, "answer", cell_ok=False)
        self.problem(
            answer_node,
            "the answer of a 'cells' quiz names a computed tensor of the same "
            "shape (variant, stage, then...) whose non-zero cells are right, "
            f"not {_kind(answer_node)}",
        )
        return None

    def choice_answer(
        self, entries: Entries, choices: tuple[str, ...], scope: _Scope
    ) -> tuple[QuizKind, Answer | None]:
        """The right choice (its text, or a computed token index), or every right choice."""
        if "answer" not in entries:
            return "choice", None
        answer_node = entries["answer"][1]
        if isinstance(answer_node, yaml.SequenceNode):
            return "multiple", self.multiple_answer(answer_node, choices)
        if isinstance(answer_node, yaml.MappingNode):
            # A computed token index (e.g. argmax): the right choice is that token.
            return "choice", self.answer_ref(answer_node, scope, "answer")
        picked = self.text(answer_node, "answer")
        if picked is None or not choices:
            return "choice", None
        if picked in choices:
            return "choice", choices.index(picked)
        self.problem(
            answer_node,
            f"answer '{picked}' is not one of the choices"
            f"{did_you_mean(picked, choices)}; choices: {_quoted(choices)}",
        )
        return "choice", None

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
