"""A quiz answered in place: choices as buttons (or their number keys), numbers in an input."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from tracer.lessons.model import Quiz
from tracer.render.text import format_number


class QuizView(VerticalScroll):
    """One question. Posts :class:`QuizView.Answered`; the screen checks it and calls ``feedback``."""

    class Answered(Message):
        def __init__(self, response: str) -> None:
            super().__init__()
            self.response = response

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.quiz: Quiz | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="quiz-question", markup=False)
        yield Vertical(id="quiz-choices")
        yield Input(id="quiz-input", placeholder="your answer, e.g. 0.95", select_on_focus=False)
        yield Static(id="quiz-hint", markup=False)
        yield Static(id="quiz-feedback", markup=False)

    def ask(self, quiz: Quiz, previous: tuple[str, bool] | None, answer: str | None) -> None:
        """Show ``quiz``; with ``previous`` (response, right), show how it was answered before."""
        self.quiz = quiz
        self.query_one("#quiz-question", Static).update(Text(quiz.question))
        choices = self.query_one("#quiz-choices", Vertical)
        choices.remove_children()
        field = self.query_one("#quiz-input", Input)
        hint = self.query_one("#quiz-hint", Static)
        if quiz.quiz_kind == "choice":
            field.display = False
            choices.display = True
            choices.mount_all(
                Button(Content(f"{number}. {choice}"), id=f"choice-{number}", compact=True)
                for number, choice in enumerate(quiz.choices, start=1)
            )
            hint.update(Text(f"Press 1–{len(quiz.choices)} or click a choice.", style="dim"))
        else:
            choices.display = False
            field.display = True
            field.value = ""
            tolerance = f" (within ±{quiz.tolerance:g})" if quiz.tolerance else ""
            hint.update(
                Text(
                    f"Type a number{tolerance} and press Enter (i or a digit starts typing; "
                    "Esc leaves the box).",
                    style="dim",
                )
            )
        if previous is not None and answer is not None:
            self.feedback(previous[0], previous[1], answer)
        else:
            self._clear_feedback()

    def focus_answer(self) -> None:
        if self.quiz is not None and self.quiz.quiz_kind == "number":
            self.query_one("#quiz-input", Input).focus()

    def choose(self, number: int) -> None:
        """A digit key: answers a choice quiz, or starts the answer of a number quiz."""
        quiz = self.quiz
        if quiz is None:
            return
        if quiz.quiz_kind == "choice":
            if 1 <= number <= len(quiz.choices):
                self.post_message(self.Answered(str(number)))
            return
        field = self.query_one("#quiz-input", Input)
        field.value = str(number)
        field.cursor_position = len(field.value)
        field.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("choice-"):
            self.post_message(self.Answered(button_id.removeprefix("choice-")))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.post_message(self.Answered(event.value.strip()))

    def feedback(self, response: str, right: bool, answer: str) -> None:
        quiz = self.quiz
        if quiz is None:
            return
        said = response
        if quiz.quiz_kind == "choice" and response.isdigit():
            index = int(response) - 1
            if 0 <= index < len(quiz.choices):
                said = quiz.choices[index]
        text = Text()
        if right:
            text.append("✓ Right", style="bold")
            text.append(f": {said}" if quiz.quiz_kind == "choice" else f": {answer}")
        else:
            text.append("✗ Not quite", style="bold")
            text.append(f": you answered {said}; the answer is {answer}.")
        if quiz.explanation:
            text.append("\n\n" + quiz.explanation)
        text.append("\n\n→ continues", style="dim")
        widget = self.query_one("#quiz-feedback", Static)
        widget.update(text)
        widget.set_class(right, "-right")
        widget.set_class(not right, "-wrong")
        if quiz.quiz_kind == "number":
            self.query_one("#quiz-input", Input).value = response
        self.screen.set_focus(None)

    def _clear_feedback(self) -> None:
        widget = self.query_one("#quiz-feedback", Static)
        widget.update("")
        widget.remove_class("-right", "-wrong")


def answer_text(quiz: Quiz, answer: float | int) -> str:
    """The right answer as the learner should see it."""
    if quiz.quiz_kind == "choice":
        index = int(answer)
        return quiz.choices[index] if 0 <= index < len(quiz.choices) else str(answer)
    return format_number(float(answer))
