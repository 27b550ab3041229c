"""Modal screens: an error to acknowledge, the key help overlay, a yes/no question, a lesson's end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tracer.sanitize import visible


class ErrorScreen(ModalScreen[None]):
    """Shows one error message, literally, until dismissed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "dismiss_error", "Close", id="attn.close"),
        # q quits, as on every screen: a learner who reads an error and presses q means it.
        Binding("q", "app.quit", "Quit", id="attn.quit"),
    ]

    def __init__(self, title: str, message: str) -> None:
        super().__init__(classes="attn-modal")
        # Plugin and file text: shown with its control characters visible, never emitted.
        self.title_text = visible(title)
        self.message = visible(message)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="-error"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(Text(self.message), markup=False, id="error-message")
            yield Button("OK", id="ok", variant="error")

    def on_mount(self) -> None:
        self.query_one("#ok", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_dismiss_error(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key the current screen answers to, as remapped by the user's keymap."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,enter", "close", "Close", id="attn.close_help"),
    ]

    def __init__(self, keys: Sequence[tuple[str, str]], intro: str = "") -> None:
        super().__init__(classes="attn-modal")
        self.keys = keys
        self.intro = intro

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, description in self.keys:
            table.add_row(Text(key), Text(description))
        with Vertical(id="dialog"):
            yield Static(Text("Keys", style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                if self.intro:
                    yield Static(Text(self.intro), markup=False, classes="help-intro")
                yield Static(table, id="help-keys")
            yield Static(Text("Esc or ? closes this help", style="dim"), id="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A question with Yes and No buttons (y / n)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="attn.yes"),
        Binding("n,escape", "answer(False)", "No", id="attn.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__(classes="attn-modal")
        self.question = visible(question)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.question), markup=False, id="dialog-title")
            with Horizontal(id="dialog-buttons"):
                yield Button("Yes", id="yes", variant="primary")
                yield Button("No", id="no")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class LessonEndScreen(ModalScreen[str]):
    """The end of a lesson: the quiz score, what it covered, and the way on.

    Dismisses with ``"next"`` (open the next lesson), ``"restart"`` or ``"stay"``.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n,enter", "choose('next')", "Next lesson", id="attn.end_next"),
        Binding("r", "choose('restart')", "Start again", id="attn.end_restart"),
        Binding("escape,s", "choose('stay')", "Stay", id="attn.end_stay"),
    ]

    def __init__(self, title: str, summary: str, next_title: str | None) -> None:
        super().__init__(classes="attn-modal")
        self.lesson_title = visible(title, multiline=False)
        self.summary = visible(summary)
        self.next_title = next_title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(
                Text(f"End of “{self.lesson_title}”", style="bold"),
                markup=False,
                id="dialog-title",
            )
            with VerticalScroll(id="dialog-body"):
                yield Static(Text(self.summary), markup=False, id="lesson-summary")
            if self.next_title is not None:
                # The next lesson's title on a line of its own: on a button beside two others
                # a long one squeezed them until they read "Start ag".
                yield Static(
                    Text(f"Next: {visible(self.next_title, multiline=False)}"),
                    markup=False,
                    id="next-title",
                )
            with Horizontal(id="dialog-buttons"):
                if self.next_title is not None:
                    yield Button("Next lesson", id="next", variant="primary")
                yield Button("Start again", id="restart")
                yield Button("Stay here", id="stay")

    def on_mount(self) -> None:
        self.query_one("#next" if self.next_title is not None else "#stay", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "stay")

    def action_choose(self, choice: str) -> None:
        if choice == "next" and self.next_title is None:
            return
        self.dismiss(choice)
