"""``attn lesson run NAME --plain --interactive``: a lesson taken line by line, in plain text.

For learners who cannot use a full-screen app (a screen reader, a dumb
terminal, an editor's shell, a script): each step prints as ``--plain``
prints it, then one line is read from stdin.

- an empty line moves on (inside a loop, to the next sub-step);
- at a quiz, the line is the answer: a number, a choice's letter or number,
  cells as ``row,column`` (tokens or 0-based indices); the verdict and the
  explanation follow it, and nothing of the answer is printed before;
- ``h`` prints the quiz's next hint, ``b`` goes back, ``q`` quits, and so
  does the end of the input.

The learner's place and answers are saved in the progress file after every
move and answer, exactly as the app saves them (:class:`~tracer.session.lesson.LessonSession`
does both), so the app's picker and ``attn lessons --json`` show them. Plain
text only: no colour, no box drawing, no cursor movement; every prompt is
flushed. Nothing here imports Textual.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from tracer.errors import EXIT_OK
from tracer.lessons.plain import (
    lesson_heading,
    quiz_lines,
    quiz_table_lines,
    step_title,
    substep_lines,
    view_lines,
)
from tracer.lessons.walk import HIDDEN_NOTE
from tracer.sanitize import message, visible

if TYPE_CHECKING:
    from tracer.session.lesson import LessonSession, LessonView, Position

KEYS = "Enter: next · b: back · q: quit"
QUIZ_KEYS = "type your answer · h: hint · b: back · q: quit"


class Interactive:
    """The read-print loop over one lesson session."""

    def __init__(self, session: LessonSession, stdin: TextIO, stdout: TextIO) -> None:
        self.session = session
        self.stdin = stdin
        self.stdout = stdout
        self.stuck: Position | None = None
        """Where a loop failed and the learner was told (Enter again skips past it)."""

    def say(self, text: str) -> None:
        """Text from the lesson (and its plugins) is shown, its control characters never run."""
        self.stdout.write(visible(text).replace("•", "-") + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str | None:
        """One line from stdin after ``prompt`` (None: the input has ended)."""
        while True:
            self.stdout.write(prompt)
            self.stdout.flush()
            try:
                line = self.stdin.readline()
            except UnicodeDecodeError:  # the rest of that line is skipped, the next one read
                self.say("That line is not text this terminal's encoding can read; type it again.")
                continue
            break
        if not line:
            self.stdout.write("\n")
            self.stdout.flush()
            return None
        return line.rstrip("\r\n").strip()

    def run(self) -> int:
        session = self.session
        self.say(lesson_heading(session.lesson))
        self.show(whole=True)
        while True:
            quiz = self.waiting_quiz()
            line = self.ask(f"[{self.keys(quiz)}] > ")
            if line is None or line.lower() in ("q", "quit"):
                self.warn(session.save())
                self.say("Stopped; your place is saved.")
                return EXIT_OK
            command = self.command(line, quiz)
            if command == "b":
                if session.back():
                    self.moved()
                else:
                    self.say("This is the first step.")
            elif command == "h" and session.quiz() is not None:
                hint = session.hint()
                if hint is None:
                    self.say("No more hints for this quiz.")
                else:
                    shown = session.hints_shown.get(session.position.step, 0)
                    self.say(f"Hint {shown}: {hint.strip()}")
            elif command == "h":
                self.say("This step is not a quiz; there are no hints.")
            elif not line:
                if self.forward():
                    return EXIT_OK
            elif quiz:
                self.answer(line)
            elif session.quiz() is not None:
                self.say("This quiz is answered already; press Enter to go on.")
            else:
                self.say(f"Not a command here: '{line}'. {KEYS}.")

    def command(self, line: str, quiz: bool) -> str:
        """``b`` or ``h`` (or ``back``, ``hint``), unless the line is a choice's letter at a
        quiz waiting for its answer: there the line is the answer."""
        word = line.lower()
        command = {"back": "b", "hint": "h"}.get(word, word)
        if word in ("b", "h") and quiz and self.letter_is_choice(word):
            return ""
        return command if command in ("b", "h") else ""

    def letter_is_choice(self, letter: str) -> bool:
        step = self.session.quiz()
        if step is None or step.quiz_kind not in ("choice", "multiple"):
            return False
        return ord(letter) - ord("a") < len(step.choices)

    def keys(self, quiz: bool) -> str:
        """The keys that work now; at a choice quiz with a choice b, 'back' goes back."""
        if not quiz:
            return KEYS
        if self.letter_is_choice("b"):
            hint = "hint" if self.letter_is_choice("h") else "h: hint"
            return f"type your answer · {hint} · back: go back · q: quit"
        return QUIZ_KEYS

    def waiting_quiz(self) -> bool:
        """Whether the step on screen is a quiz not answered yet."""
        return self.session.quiz() is not None and self.session.recorded() is None

    def warn(self, warning: str | None) -> None:
        if warning:
            self.stdout.flush()
            print(message(f"attn: warning: {warning}"), file=sys.stderr, flush=True)

    def forward(self) -> bool:
        """An empty line: on to the next step or sub-step; True once the lesson is over."""
        session = self.session
        before = session.position
        try:
            moved = session.next()
        except Exception as error:  # the variant failed while running the loop on
            self.say(f"This step failed: {error}")
            return False
        if moved == "failed":
            if self.stuck == before:  # said once already: Enter again skips the loop's rest
                self.stuck = None
                if not session.go_to(before.step + 1):
                    self.warn(session.finish())
                    self.end()
                    return True
                self.warn(session.save())
                self.show(whole=True)
                return False
            self.stuck = before
            self.say(f"The loop failed here: {session.loop_error}")
            self.say("Press Enter again to go on to the next step.")
            return False
        if moved == "end":
            self.warn(session.warning)
            self.end()
            return True
        self.warn(session.save())
        self.show(whole=session.position.step != before.step)
        return False

    def moved(self) -> None:
        self.warn(self.session.save())
        self.show(whole=True)

    def answer(self, line: str) -> None:
        session = self.session
        try:
            hid = any(table.hidden for table in session.view().tables)
            verdict = session.answer(line)
        except Exception as error:  # the answer could not be computed: say so, stay
            self.say(f"This quiz could not be graded: {error}")
            return
        self.say(verdict.line)
        if verdict.right is None:
            return
        self.warn(session.warning)
        if verdict.explanation:
            self.say(f"Why: {verdict.explanation}")
        if hid:  # the cells that held the answer may be read now
            self.say("\n".join(quiz_table_lines(session.view().step)))

    def show(self, *, whole: bool) -> None:
        """The step on screen; ``whole`` false: only a loop's new sub-step."""
        session = self.session
        here = session.position
        if whole:
            self.say(step_title(here.step, len(session.steps), session.steps[here.step]))
        try:
            if whole:
                session.count_loop(here.step)  # "sub-step 2 of 6" needs the 6
            view = session.view()
        except Exception as error:
            self.say(f"This step could not be computed: {error}")
            return
        self.say("\n".join(self.lines(view, whole=whole)))

    def lines(self, view: LessonView, *, whole: bool) -> list[str]:
        if view.loop is not None:
            loop = view.loop
            lines = view_lines(view.step) if whole else []
            number, count = loop.place
            said = ("?" if number is None else str(number), "?" if count is None else str(count))
            lines.append(f"Sub-step {said[0]} of {said[1]}:")
            query = getattr(view.step.step, "query", None)
            lines.extend(substep_lines(loop.sub, loop.tokens, query, loop.shown))
            if loop.shown is not None and loop.shown.concealed_in_text:
                lines.append(HIDDEN_NOTE)
            return lines
        if view.quiz is None:
            return view_lines(view.step)
        prompt = view.quiz
        lines = quiz_lines(view.step, prompt.choices)
        lines.extend(f"Hint {n}: {hint.strip()}" for n, hint in enumerate(prompt.hints, 1))
        verdict = prompt.verdict
        if verdict is None:
            lines.append(prompt.how)
        else:
            lines.append(f"Answered before. {verdict.line}")
            if verdict.explanation:
                lines.append(f"Why: {verdict.explanation}")
        return lines

    def end(self) -> None:
        session = self.session
        self.say("--- End of the lesson.")
        self.say(session.summary())
        following = session.next_lesson()
        if following is not None:
            self.say(f"Next: lesson {following[1]} (attn lesson run {following[0].stem} -i)")


def run_interactive(session: LessonSession, stdin: TextIO, stdout: TextIO) -> int:
    """Take ``session``'s lesson with lines from ``stdin``; the exit status (0)."""
    return Interactive(session, stdin, stdout).run()
