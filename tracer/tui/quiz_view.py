"""A quiz answered in place: choices as buttons (or their number keys), numbers and cells typed.

One answer counts: once the answer is revealed, the quiz no longer takes responses. A response
that is not an answer at all (text for a number, a letter that is no choice) is refused with a
line saying what to type, and reveals nothing. Grading is :func:`tracer.lessons.grading.grade`;
prose is filled in with :func:`tracer.lessons.prose.live_text` (through the lesson's runner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from tracer.lessons.grading import response_problem
from tracer.lessons.model import Quiz
from tracer.sanitize import visible
from tracer.tui.backdrop import Backdrop
from tracer.tui.kept import Kept
from tracer.tui.steady import Column, Label, SteadySize

if TYPE_CHECKING:
    from collections.abc import Callable

CHOICE_BUTTONS = 6
"""Choice buttons made with the view: mounting them on the first quiz costs a layout and a frame."""


class QuizButton(Button, SteadySize):
    """A ``Button`` laid out once per change: a new label resizes it inside the quiz's pass."""


PLACEHOLDERS = {
    "number": "your answer: a number",
    "cells": "cells as row,column (tokens or indices), separated by ';'",
}


class QuizView(VerticalScroll, SteadySize, Kept, Backdrop):
    """One question. Posts :class:`QuizView.Answered`; the screen checks it and calls ``feedback``."""

    class Answered(Message):
        def __init__(self, response: str) -> None:
            super().__init__()
            self.response = response

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.quiz: Quiz | None = None
        self.live: Callable[[str], str] | None = None
        """Fills in an author's live values (the lesson session's); None: shown as written."""
        self.answered = False
        """The answer was revealed: further responses are ignored (one answer counts)."""
        self.hints_shown = 0
        self.picked: set[int] = set()
        """Choices toggled so far in a multiple-choice quiz (0-based)."""

    def compose(self) -> ComposeResult:
        yield Label(id="quiz-question", markup=False)
        with Column(id="quiz-choices"):
            for number in range(1, CHOICE_BUTTONS + 1):
                button = QuizButton("", id=f"choice-{number}", compact=True)
                button.display = False
                yield button
        yield Input(id="quiz-input", placeholder=PLACEHOLDERS["number"], select_on_focus=False)
        yield QuizButton("Check", id="quiz-submit", compact=True)
        yield Label(id="quiz-hint", markup=False)
        yield QuizButton("Hint", id="quiz-more-hints", compact=True)
        yield Label(id="quiz-hints", markup=False)
        yield Label(id="quiz-feedback", markup=False)

    def text(self, prose: str) -> str:
        """Prose as shown: live values filled in when the lesson session is known."""
        if self.live is None or self.quiz is None:
            return visible(prose)
        try:
            return visible(self.live(prose))
        except Exception:  # a failing run is reported by the screen; show the words as written
            return visible(prose)

    def ask(
        self,
        quiz: Quiz,
        previous: tuple[str, bool] | None,
        answer: str | None,
        live: Callable[[str], str] | None = None,
    ) -> None:
        """Show ``quiz``; with ``previous`` (response, right), show how it was answered before.

        ``live`` fills in the author's live values (the screen passes its session's).
        """
        self.quiz = quiz
        self.live = live
        self.answered = False
        self.hints_shown = 0
        self.picked = set()
        self.query_one("#quiz-question", Static).update(Text(self.text(quiz.question)))
        choices = self.query_one("#quiz-choices", Vertical)
        field = self.query_one("#quiz-input", Input)
        hint = self.query_one("#quiz-hint", Static)
        hint.display = True
        submit = self.query_one("#quiz-submit", Button)
        submit.display = quiz.quiz_kind == "multiple"
        if quiz.quiz_kind in ("choice", "multiple"):
            field.display = False
            choices.display = True
            self._show_choices(choices, len(quiz.choices))
            if quiz.quiz_kind == "choice":
                hint.update(Text(f"Press 1–{len(quiz.choices)} or click a choice.", style="dim"))
            else:
                hint.update(
                    Text(
                        f"More than one may be right: press 1–{len(quiz.choices)} or click to "
                        "mark each one, then Check.",
                        style="dim",
                    )
                )
        else:
            self._show_choices(choices, 0)
            choices.display = False
            field.display = True
            field.value = ""
            field.placeholder = PLACEHOLDERS[quiz.quiz_kind]
            if quiz.quiz_kind == "cells":
                hint.update(
                    Text(
                        "Type every cell you select (tokens or 0-based indices) and press Enter.",
                        style="dim",
                    )
                )
            else:
                if quiz.relative:
                    tolerance = f" (within {quiz.tolerance * 100:g}%)"
                else:
                    tolerance = f" (within ±{quiz.tolerance:g})" if quiz.tolerance else ""
                hint.update(
                    Text(
                        f"Type a number{tolerance} and press Enter (i or a digit starts typing; "
                        "Esc leaves the box).",
                        style="dim",
                    )
                )
        self._show_hints()
        if previous is not None and answer is not None:
            self.feedback(previous[0], previous[1], answer)
        else:
            self._clear_feedback()

    def _show_choices(self, choices: Vertical, count: int) -> None:
        """One button per choice, reused from quiz to quiz (mounting new ones costs frames)."""
        buttons = list(choices.query(Button))
        for number, button in enumerate(buttons, start=1):
            shown = number <= count
            if shown:
                button.label = Content(self._choice_label(number))
                button.disabled = False
            if button.display != shown:
                button.display = shown
        if count > len(buttons):
            choices.mount_all(
                QuizButton(Content(self._choice_label(number)), id=f"choice-{number}", compact=True)
                for number in range(len(buttons) + 1, count + 1)
            )

    def _choice_label(self, number: int) -> str:
        assert self.quiz is not None
        choice = self.text(self.quiz.choices[number - 1])
        if self.quiz.quiz_kind == "multiple":
            mark = "[x]" if number - 1 in self.picked else "[ ]"
            return f"{mark} {number}. {choice}"
        return f"{number}. {choice}"

    def _show_hints(self) -> None:
        quiz = self.quiz
        button = self.query_one("#quiz-more-hints", Button)
        shown = self.query_one("#quiz-hints", Static)
        hints = quiz.hints if quiz is not None else ()
        remaining = len(hints) - self.hints_shown
        button.display = remaining > 0 and not self.answered
        button.label = f"Hint ({self.hints_shown + 1} of {len(hints)})" if remaining > 0 else "Hint"
        shown.update(
            Text(
                "\n".join(
                    f"Hint {n}: {self.text(h)}"
                    for n, h in enumerate(hints[: self.hints_shown], start=1)
                )
            )
        )
        shown.display = self.hints_shown > 0  # no blank line where no hint is shown yet

    def show_hint(self) -> None:
        """Reveal the next hint, one at a time."""
        if self.quiz is not None and self.hints_shown < len(self.quiz.hints):
            self.hints_shown += 1
            self._show_hints()

    def focus_answer(self) -> None:
        quiz = self.quiz
        if quiz is not None and quiz.quiz_kind in ("number", "cells") and not self.answered:
            self._focus_field()

    def _focus_field(self) -> Input:
        """Focus the answer box now, not after the keys already waiting: the rest of a
        burst of typing ("0.95" typed fast, or sent at once) must land in the box too."""
        field = self.query_one("#quiz-input", Input)
        self.screen.set_focus(field)
        return field

    def take_key(self, key: str, character: str | None) -> bool:
        """A key that reached the screen, not the answer box: typing that belongs in the box.

        A digit, "." or "," starts typing while the box is not focused. Keys typed fast (or
        sent at once by a terminal) are handed to the screen before the first one has moved
        the focus, so while the box has the focus, any character that still arrives here is
        the rest of that answer. True if the key went into the box.
        """
        quiz = self.quiz
        if quiz is None or quiz.quiz_kind not in ("number", "cells") or self.answered:
            return False
        if character is None or not character.isprintable() or key in ("space", "tab"):
            return False
        field = self.query_one("#quiz-input", Input)
        if self.screen.focused is not field and not (character.isdigit() or character in ".,"):
            return False
        return self.type_text(character)

    def type_text(self, text: str) -> bool:
        """Text pasted while the box is not focused: into the box, whole. False if no box."""
        quiz = self.quiz
        line = text.splitlines()[0] if text.strip() else ""
        if quiz is None or quiz.quiz_kind not in ("number", "cells") or self.answered or not line:
            return False
        field = self._focus_field()
        field.insert_text_at_cursor(line)
        return True

    def choose(self, number: int) -> None:
        """A digit key: answers or marks a choice, or starts typing a number or cells."""
        quiz = self.quiz
        if quiz is None or self.answered:
            return
        if quiz.quiz_kind == "choice":
            if 1 <= number <= len(quiz.choices):
                self._answer(str(number))
            return
        if quiz.quiz_kind == "multiple":
            if 1 <= number <= len(quiz.choices):
                self.picked.symmetric_difference_update({number - 1})
                button = self.query_one(f"#choice-{number}", Button)
                button.label = Content(self._choice_label(number))
            return
        field = self._focus_field()
        field.value = str(number)
        field.cursor_position = len(field.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("choice-"):
            self.choose(int(button_id.removeprefix("choice-")))
        elif button_id == "quiz-more-hints":
            self.show_hint()
        elif button_id == "quiz-submit" and not self.answered:
            if not self.picked:
                self.refuse("mark at least one choice first")
            else:
                self._answer(" ".join(str(i + 1) for i in sorted(self.picked)))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip() and not self.answered:
            self._answer(event.value.strip())

    def _answer(self, response: str) -> None:
        """Post a response only if it is an answer at all; otherwise say what to type."""
        quiz = self.quiz
        if quiz is None:
            return
        problem = response_problem(quiz, response)
        if problem is not None:
            self.refuse(problem)
            return
        # The screen's session grades it (and refuses cells that are no selection).
        self.post_message(self.Answered(response))

    def refuse(self, problem: str) -> None:
        """Say why a response is not an answer at all (nothing is revealed)."""
        self.query_one("#quiz-hint", Static).update(Text(f"Not an answer: {problem}."))

    def feedback(self, response: str, right: bool, answer: str) -> None:
        quiz = self.quiz
        if quiz is None:
            return
        self.answered = True
        said = response
        if quiz.quiz_kind == "choice" and response.isdigit():
            index = int(response) - 1
            if 0 <= index < len(quiz.choices):
                said = self.text(quiz.choices[index])
        elif quiz.quiz_kind == "multiple":
            numbers = [int(n) - 1 for n in response.split() if n.isdigit()]
            said = ", ".join(self.text(quiz.choices[i]) for i in numbers if i < len(quiz.choices))
        text = Text()
        if right:
            text.append("✓ Right", style="bold")
            text.append(f": {said}" if quiz.quiz_kind in ("choice", "multiple") else f": {answer}")
        else:
            text.append("✗ Not quite", style="bold")
            text.append(f": you answered {said}; the answer is {answer}.")
        if quiz.explanation:
            text.append("\n\n" + self.text(quiz.explanation))
        text.append("\n\n→ continues", style="dim")
        widget = self.query_one("#quiz-feedback", Static)
        widget.update(text)
        widget.set_class(right, "-right")
        widget.set_class(not right, "-wrong")
        if quiz.quiz_kind in ("number", "cells"):
            field = self.query_one("#quiz-input", Input)
            field.value = response
            field.disabled = True
        self.query_one("#quiz-submit", Button).display = False
        for button in self.query_one("#quiz-choices", Vertical).query(Button):
            button.disabled = True
        self._show_hints()
        # How to answer is no longer news; the verdict and the explanation are, so they get
        # its room and are scrolled into view (a short terminal hid them below the box).
        self.query_one("#quiz-hint", Static).display = False
        self.call_after_refresh(self.scroll_to_widget, widget, animate=False)
        self.screen.set_focus(None)

    def _clear_feedback(self) -> None:
        widget = self.query_one("#quiz-feedback", Static)
        widget.update("")
        widget.remove_class("-right", "-wrong")
        self.query_one("#quiz-input", Input).disabled = False
