"""A quiz answered in place: choices as buttons (or their number keys), numbers and cells typed.

One answer counts: once the answer is revealed, the quiz no longer takes responses. A response
that is not an answer at all (text for a number, a letter that is no choice) is refused with a
line saying what to type, and reveals nothing. Grading is :func:`tracer.lessons.grading.grade`;
prose is filled in with :func:`tracer.lessons.prose.live_text` (through the lesson's runner).

Keys (what :data:`QUIZ_KEYS` says in the help):

- a number or cells quiz: the answer box has the focus on arrival and takes every character
  (letters, spaces and ``;`` included); Enter checks; Esc leaves the box, and then the
  lesson's keys work again (``i``, Enter or a digit goes back into it). → and ← step on
  while the box is empty.
- a choice quiz: the first choice (or the one marked) has the focus; ↑/↓ or Tab move it,
  Enter answers the focused choice, Space marks it; digits and clicks answer at once.
- a quiz with several right choices: Space (or a digit, or a click) marks and unmarks the
  focused choice, Enter checks the marked ones.

What is marked or typed but not checked is the session's draft (``on_draft``), so it is
there again after stepping away and back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from tracer.lessons.grading import response_problem
from tracer.lessons.model import Quiz
from tracer.sanitize import visible
from tracer.tui import textual_hooks as hooks
from tracer.tui.backdrop import Backdrop
from tracer.tui.kept import KeptBlank
from tracer.tui.steady import Column, Label, SteadySize, inside_shown
from tracer.tui.text_pane import code_spans, same_text

if TYPE_CHECKING:
    from collections.abc import Callable

CHOICE_BUTTONS = 6
"""Choice buttons made with the view: mounting them on the first quiz costs a layout and a frame."""


QUIZ_KEYS = (
    "Quizzes: a number or cells quiz's box takes every key you type (letters too); Enter "
    "checks; Esc leaves the box for the lesson's keys, and i, Enter or a digit goes back in; "
    "→/← step on while the box is empty. Choices: ↑/↓ or Tab move, Enter answers (or checks "
    "the marked ones), Space marks, a digit or a click picks. What you mark or type stays "
    "when you step away and back."
)
"""The quiz's keys in words, for the lesson screen's help."""


def say(label: Static, text: Text | str) -> None:
    """Show ``text`` in ``label``, unless it shows that already: a label told the same again
    (the same quiz asked again on coming back to it) is not measured and drawn anew."""
    if not same_text(label.content, text):
        label.update(text)


class RestyledWhenSeen(Widget):
    """Restyled for a lost focus only when it can be seen again.

    Leaving a quiz step hides the quiz and takes the focus from its box or choice. Textual
    restyles a widget that loses the focus at once, through the whole stylesheet (an input's
    parts too): one or two milliseconds of that key press, for a widget no one sees. Here
    that restyle waits: the lesson's drawing does it while the learner reads (its
    ``prepare_nearby``), or, at the latest, when the quiz is shown again
    (:meth:`QuizView.showing`), before the frame that draws it.
    """

    _restyle_due = False

    def watch_has_focus(self, has_focus: bool) -> None:
        if not has_focus and hooks.hooks_on() and not self._seen():
            self._restyle_due = True
            return
        self._restyle_due = False
        super().watch_has_focus(has_focus)

    def _seen(self) -> bool:
        return self.display and inside_shown(self)

    def restyle_if_due(self) -> None:
        if self._restyle_due:
            self._restyle_due = False
            self.update_node_styles()


class QuizButton(Button, SteadySize, RestyledWhenSeen):
    """A ``Button`` laid out once per change: a new label resizes it inside the quiz's pass."""


class ChoiceButton(QuizButton):
    """One choice: Enter answers (or checks the marks), Space marks, ↑/↓ move between choices."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "check", "Check", id="attn.quiz_check"),
        Binding("space", "mark", "Mark", key_display="Space", id="attn.quiz_mark"),
        Binding("down", "move(1)", "Next choice", show=False, id="attn.quiz_down"),
        Binding("up", "move(-1)", "Previous choice", show=False, id="attn.quiz_up"),
    ]

    @property
    def number(self) -> int:
        """This choice's number, from 1."""
        return int((self.id or "choice-0").removeprefix("choice-"))

    def _view(self) -> QuizView:
        return self.query_ancestor(QuizView)

    def action_check(self) -> None:
        self._view().check(self.number)

    def action_mark(self) -> None:
        self._view().mark(self.number)

    def action_move(self, by: int) -> None:
        self._view().move_focus(self.number, by)


class AnswerBox(Input, RestyledWhenSeen):
    """A number or cells quiz's box: every character typed while it has the focus is the answer.

    Enter checks, Esc leaves it; → and ← step on (the screen's keys) while it is empty.
    """

    takes_every_key: ClassVar[bool] = True
    """Keys that are characters never reach the app's bindings (q, ?) while this is focused."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Check", id="attn.quiz_check"),
        # Input's own → (the cursor), named in the footer for what it does in an empty box.
        Binding("right", "cursor_right", "Next (box empty)", key_display="→", id="attn.quiz_next"),
        Binding("escape", "leave", "Leave the box", key_display="Esc", id="attn.quiz_leave"),
    ]

    def __init__(self, *, id: str, placeholder: str) -> None:
        # No validators (the session grades), so no validation either: Input's would only
        # toggle its -valid class, and restyling the box on the way out of a quiz step cost
        # a millisecond of that key press.
        super().__init__(id=id, placeholder=placeholder, select_on_focus=False, validate_on=())
        # A steady cursor: the box draws the same from moment to moment (no repaint twice a
        # second while the learner thinks, and a picture of the screen does not depend on
        # when it is taken). The box's focus style shows where typing goes.
        self.set_reactive(Input.cursor_blink, False)

    def action_cursor_right(self, select: bool = False) -> None:
        if not self.value and not select:
            raise SkipAction  # nothing typed: → is the lesson's "next"
        super().action_cursor_right(select)

    def action_cursor_left(self, select: bool = False) -> None:
        if not self.value and not select:
            raise SkipAction  # nothing typed: ← is the lesson's "back"
        super().action_cursor_left(select)

    def action_leave(self) -> None:
        self.screen.set_focus(None)

    def watch_value(self, value: str) -> None:
        for view in self.ancestors:
            if isinstance(view, QuizView):
                view.drafted()
                return


PLACEHOLDERS = {
    "number": "your answer: a number",
    "cells": "cells as row,column (tokens or indices), separated by ';'",
}


class QuizView(VerticalScroll, SteadySize, KeptBlank, Backdrop):
    """One question. Posts :class:`QuizView.Answered`; the screen checks it and calls ``feedback``."""

    DEFAULT_CSS = """
    QuizView ChoiceButton:focus, QuizView QuizButton:focus {
        background: $accent;
        color: $text;
        text-style: bold;
    }
    QuizView AnswerBox:focus {
        border: tall $accent;
    }
    """

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
        """Choices marked so far (0-based; at most one in a one-answer quiz)."""
        self.on_draft: Callable[[str], None] | None = None
        """Told what is marked or typed whenever the learner changes it (the screen keeps it
        in the lesson session as the quiz's draft)."""
        self._quiet = False
        """Set while the view itself fills the box or the marks (not the learner's doing)."""

    def compose(self) -> ComposeResult:
        yield Label(id="quiz-question", markup=False)
        with Column(id="quiz-choices"):
            for number in range(1, CHOICE_BUTTONS + 1):
                button = ChoiceButton("", id=f"choice-{number}", compact=True)
                button.display = False
                yield button
        yield AnswerBox(id="quiz-input", placeholder=PLACEHOLDERS["number"])
        yield QuizButton("Check", id="quiz-submit", compact=True)
        yield Label(id="quiz-hint", markup=False)
        yield QuizButton("Hint", id="quiz-more-hints", compact=True)
        yield Label(id="quiz-hints", markup=False)
        yield Label(id="quiz-feedback", markup=False)

    def showing(self) -> None:
        """The quiz is about to be shown: a box or choice that lost the focus while it was
        hidden is restyled now, before the frame that draws it (see :class:`RestyledWhenSeen`)."""
        for widget in self.query("*").results(RestyledWhenSeen):
            widget.restyle_if_due()

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

        ``live`` fills in the author's live values (the screen passes its session's). What was
        marked or typed before comes back with :meth:`resume`.
        """
        self._quiet = True
        try:
            self._ask(quiz, previous, answer, live)
        finally:
            self._quiet = False

    def _ask(
        self,
        quiz: Quiz,
        previous: tuple[str, bool] | None,
        answer: str | None,
        live: Callable[[str], str] | None,
    ) -> None:
        self.quiz = quiz
        self.live = live
        self.answered = False
        self.hints_shown = 0
        self.picked = set()
        say(self.query_one("#quiz-question", Static), code_spans(self.text(quiz.question)))
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
                say(
                    hint,
                    Text(
                        f"Press 1–{len(quiz.choices)}, or ↑/↓ and Enter, or click a choice "
                        "(Space marks one to come back to).",
                        style="dim",
                    ),
                )
            else:
                say(
                    hint,
                    Text(
                        f"More than one may be right: mark each one (Space, 1–"
                        f"{len(quiz.choices)} or a click; ↑/↓ move), then Enter or Check.",
                        style="dim",
                    ),
                )
        else:
            self._show_choices(choices, 0)
            choices.display = False
            field.display = True
            field.value = ""
            field.placeholder = PLACEHOLDERS[quiz.quiz_kind]
            if quiz.quiz_kind == "cells":
                say(
                    hint,
                    Text(
                        "Type every cell you select (tokens or 0-based indices) and press Enter "
                        "(every key types here; Esc leaves the box).",
                        style="dim",
                    ),
                )
            else:
                if quiz.relative:
                    tolerance = f" (within {quiz.tolerance * 100:g}%)"
                else:
                    tolerance = f" (within ±{quiz.tolerance:g})" if quiz.tolerance else ""
                say(
                    hint,
                    Text(
                        f"Type a number{tolerance} and press Enter (every key types here; "
                        "Esc leaves the box).",
                        style="dim",
                    ),
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
                ChoiceButton(
                    Content(self._choice_label(number)), id=f"choice-{number}", compact=True
                )
                for number in range(len(buttons) + 1, count + 1)
            )

    def _choice_label(self, number: int) -> str:
        assert self.quiz is not None
        choice = self.text(self.quiz.choices[number - 1])
        marked = number - 1 in self.picked
        if self.quiz.quiz_kind == "multiple":
            return f"{'[x]' if marked else '[ ]'} {number}. {choice}"
        return f"{'(•)' if marked else '( )'} {number}. {choice}"

    def _show_hints(self) -> None:
        quiz = self.quiz
        button = self.query_one("#quiz-more-hints", Button)
        shown = self.query_one("#quiz-hints", Static)
        hints = quiz.hints if quiz is not None else ()
        remaining = len(hints) - self.hints_shown
        button.display = remaining > 0 and not self.answered
        button.label = f"Hint ({self.hints_shown + 1} of {len(hints)})" if remaining > 0 else "Hint"
        say(
            shown,
            code_spans(
                "\n".join(
                    f"Hint {n}: {self.text(h)}"
                    for n, h in enumerate(hints[: self.hints_shown], start=1)
                )
            ),
        )
        shown.display = self.hints_shown > 0  # no blank line where no hint is shown yet

    def show_hint(self) -> None:
        """Reveal the next hint, one at a time."""
        if self.quiz is not None and self.hints_shown < len(self.quiz.hints):
            self.hints_shown += 1
            self._show_hints()

    # Drafts: what is marked or typed, kept by the screen's session --------------------------

    def draft(self) -> str:
        """What is marked or typed and not checked, written as a response is ("1 3", "0.9")."""
        quiz = self.quiz
        if quiz is None or self.answered:
            return ""
        if quiz.quiz_kind in ("number", "cells"):
            return self.query_one("#quiz-input", Input).value
        return " ".join(str(index + 1) for index in sorted(self.picked))

    def drafted(self) -> None:
        """The learner changed the marks or the text: tell ``on_draft``."""
        if not self._quiet and not self.answered and self.on_draft is not None:
            self.on_draft(self.draft())

    def resume(self, draft: str) -> None:
        """Bring back ``draft`` (see :meth:`draft`) and give the quiz the focus, if unanswered."""
        quiz = self.quiz
        if quiz is None or self.answered:
            return
        self._quiet = True
        try:
            if quiz.quiz_kind in ("number", "cells"):
                field = self.query_one("#quiz-input", Input)
                field.value = draft
                field.cursor_position = len(draft)
            else:
                count = len(quiz.choices)
                numbers = [int(n) for n in draft.split() if n.isdigit() and 1 <= int(n) <= count]
                if quiz.quiz_kind == "choice":
                    numbers = numbers[:1]
                self.picked = {n - 1 for n in numbers}
                self._relabel()
        finally:
            self._quiet = False
        self.focus_answer()

    def _choices(self) -> dict[int, ChoiceButton]:
        """The choice buttons by number (a new one is missing while it is being mounted)."""
        # The box's children, not a query per choice: a query walks the whole view.
        box = self.query_one("#quiz-choices", Vertical)
        return {c.number: c for c in box.children if isinstance(c, ChoiceButton)}

    def _choice(self, number: int) -> ChoiceButton | None:
        """Choice ``number``'s button (None while a new one is still being mounted)."""
        return self._choices().get(number)

    def _relabel(self) -> None:
        assert self.quiz is not None
        buttons = self._choices()
        for number in range(1, len(self.quiz.choices) + 1):
            button = buttons.get(number)
            if button is not None:
                button.label = Content(self._choice_label(number))

    def focus_answer(self) -> None:
        """Focus the answer box, or the marked (else the first) choice, of an unanswered quiz."""
        quiz = self.quiz
        if quiz is None or self.answered:
            return
        if quiz.quiz_kind in ("number", "cells"):
            self._focus_field()
        elif quiz.choices:
            button = self._choice(min(self.picked) + 1 if self.picked else 1)
            if button is not None:
                self.screen.set_focus(button)

    def move_focus(self, number: int, by: int) -> None:
        """↑/↓ from choice ``number``: the choice before or after it (none past the ends)."""
        button = self._choice(number + by)
        if self.quiz is not None and button is not None and number + by <= len(self.quiz.choices):
            self.screen.set_focus(button)

    def mark(self, number: int) -> None:
        """Space on choice ``number``: marks it (one-answer quiz) or marks/unmarks it."""
        quiz = self.quiz
        if quiz is None or self.answered or not 1 <= number <= len(quiz.choices):
            return
        if quiz.quiz_kind == "multiple":
            self.picked.symmetric_difference_update({number - 1})
        else:
            self.picked = {number - 1}
        self._relabel()
        self.drafted()

    def check(self, number: int) -> None:
        """Enter on choice ``number``: answers it, or (several right) checks the marked ones."""
        quiz = self.quiz
        if quiz is None or self.answered:
            return
        if quiz.quiz_kind == "multiple":
            self.check_marked()
        elif 1 <= number <= len(quiz.choices):
            self._answer(str(number))

    def check_marked(self) -> None:
        if not self.picked:
            self.refuse("mark at least one choice first (Space marks the highlighted one)")
        else:
            self._answer(" ".join(str(i + 1) for i in sorted(self.picked)))

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
            self.mark(number)
            return
        self.type_text(str(number))  # after what was typed before leaving the box

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("choice-"):
            self.choose(int(button_id.removeprefix("choice-")))
        elif button_id == "quiz-more-hints":
            self.show_hint()
        elif button_id == "quiz-submit" and not self.answered:
            self.check_marked()

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
        say(self.query_one("#quiz-hint", Static), Text(f"Not an answer: {problem}."))

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
        if quiz.quiz_kind in ("choice", "multiple"):  # the marks say what was answered
            count = len(quiz.choices)
            self.picked = {
                int(n) - 1 for n in response.split() if n.isdigit() and 0 < int(n) <= count
            }
            self._relabel()
        text = Text()
        if right:
            text.append("✓ Right", style="bold")
            text.append(f": {said}" if quiz.quiz_kind in ("choice", "multiple") else f": {answer}")
        else:
            text.append("✗ Not quite", style="bold")
            text.append(f": you answered {said}; the answer is {answer}.")
        if quiz.explanation:
            text.append("\n\n")
            text.append_text(code_spans(self.text(quiz.explanation)))
        text.append("\n\n→ continues", style="dim")
        widget = self.query_one("#quiz-feedback", Static)
        say(widget, text)
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
        say(widget, "")
        widget.remove_class("-right", "-wrong")
        self.query_one("#quiz-input", Input).disabled = False
