"""``attn lesson run NAME --plain --interactive``: a lesson taken line by line, in plain text.

For learners who cannot use a full-screen app (a screen reader, a dumb
terminal, an editor's shell, a script): each step prints as ``--plain``
prints it, then one line is read from stdin.

- an empty line moves on (inside a loop, to the next sub-step);
- at a quiz, the line is the answer: a number, a choice's letter or number,
  cells as ``row,column`` (tokens or 0-based indices); the verdict and the
  explanation follow it, and nothing of the answer is printed before;
- ``h`` prints the quiz's next hint (offered only while it has one left), ``t`` reads
  the step's tables row by row with their labels ("journey, with: 0.8434"), ``b``
  goes back, ``s`` starts the lesson again from its first step (answers kept, as in
  the app), ``q`` quits, and so does the end of the input;
- Enter at a quiz skips it, and says so; at the end, the score is said (not the
  checkpoints again) and ``s`` or ``b`` keep the lesson open.

What is typed is bounded and read as text (docs/reference.md, "Typed answers"):

- a line has at most :data:`MAX_LINE` characters: a longer one is read in bounded chunks,
  never whole, skipped and said in one line; one longer than :data:`GIVE_UP_BYTES` ends
  the input (exit status 2, the place saved);
- a line that is not text in the input's encoding, or holds a NUL or another control
  character, is said in one line and read again; :data:`MAX_UNREADABLE` such lines in a
  row end the input (exit status 2);
- standard input must be a terminal, a pipe, a socket, a text file or ``/dev/null``:
  anything else (a folder, a device, a binary file, a closed descriptor) is refused in
  one line before the lesson opens (:func:`stdin_problem`);
- what is quoted back of a line is cut (:func:`tracer.lessons.grading.echo`), and a
  warning (the progress file cannot be saved) is said once, not at every line.

The learner's place and answers are saved in the progress file after every
move and answer, exactly as the app saves them (:class:`~tracer.session.lesson.LessonSession`
does both), so the app's picker and ``attn lessons --json`` show them. Plain
text only: no colour, no box drawing, no cursor movement; every prompt is
flushed. Nothing here imports Textual.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
import unicodedata
from typing import TYPE_CHECKING, Any, TextIO

from tracer.errors import EXIT_OK, EXIT_USAGE
from tracer.lessons.grading import echo
from tracer.lessons.hiding import HIDDEN_NOTE
from tracer.render.labels import loop_matrix_axes
from tracer.sanitize import message, visible
from tracer.session.lesson import Position
from tracer.session.moves import AtEnd, Failed
from tracer.text.plain_lesson import (
    lesson_heading,
    quiz_lines,
    quiz_table_lines,
    row_lines,
    step_title,
    substep_lines,
    view_lines,
)

if TYPE_CHECKING:
    from tracer.lessons.hiding import Table
    from tracer.session.lesson import LessonSession, LessonView

KEYS = "Enter: next · b: back · q: quit"
END_KEYS = "Enter or q: quit · s: start again · b: back"
MAX_LINE = 4096
"""The most characters of one typed line (an answer, a command)."""
GIVE_UP_BYTES = 64 * 2**20
"""A line longer than this (bytes) is no learner's typing: the input ends there."""
MAX_UNREADABLE = 3
"""This many lines in a row that are not text end the input."""
_CHUNK = 64 * 1024
"""What is read at a time of a line too long to keep."""


class InputEnds(Exception):
    """Standard input sent what no learner types (a huge line, binary data): stop reading."""


def stdin_problem(stream: TextIO | None) -> str | None:
    """Why ``stream`` (standard input) cannot be read as typed lines, in one line; None if it
    can: a terminal, a pipe, a socket, a text file or ``/dev/null``.

    Checked with ``os.fstat`` before anything is read. (A fresh CPython refuses a folder
    as standard input itself, before ``attn`` starts: "Fatal Python error: init_sys_streams:
    <stdin> is a directory".)"""
    how = "give the answers from a terminal, a pipe or a text file"
    if stream is None:
        return f"standard input is closed; {how}"
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None  # not a descriptor (a test's text): read as it is
    try:
        status = os.fstat(fd)
    except OSError:
        return f"standard input is closed; {how}"
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        return f"standard input is a folder, not text; {how}"
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return None
    if stat.S_ISCHR(mode):
        if os.isatty(fd) or _is_null(status):
            return None
        return f"standard input is a device that is not a terminal; {how}"
    if not stat.S_ISREG(mode):
        return f"standard input is not a terminal, a pipe or a file; {how}"
    try:  # a file: its next bytes must be text (read in place, without moving)
        start = os.lseek(fd, 0, os.SEEK_CUR)
        head = os.pread(fd, 8192, start)
    except OSError as error:
        return f"standard input cannot be read ({error.strerror or error}); {how}"
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        decoder = codecs.getincrementaldecoder(encoding)("strict")
        decoder.decode(head, final=len(head) < 8192)
    except (UnicodeDecodeError, LookupError):
        return f"standard input is a file that is not {encoding} text; {how}"
    if b"\0" in head:
        return f"standard input is a binary file, not text; {how}"
    return None


def _is_null(status: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(null.st_mode) and null.st_rdev == status.st_rdev


def _text_problem(text: str) -> str | None:
    """Why a decoded line is not typed text (a NUL, an escape sequence), or None."""
    for character in text:
        if character == "\t":
            continue
        if unicodedata.category(character) == "Cc":
            if character == "\0":
                return "That line holds a NUL byte: it is not text"
            return (
                "That line holds a control character (an arrow key or Esc sends one), "
                "which is not text"
            )
    return None


class Interactive:
    """The read-print loop over one lesson session."""

    def __init__(self, session: LessonSession, stdin: TextIO, stdout: TextIO) -> None:
        self.session = session
        self.stdin = stdin
        self.stdout = stdout
        self.stuck: Position | None = None
        """Where a loop failed and the learner was told (Enter again skips past it)."""
        self.warned: set[str] = set()
        """Warnings said already: each is said once (a read-only folder, at every line)."""
        self.ended = False
        """The end was said: Enter quits, ``s`` starts again, ``b`` goes back."""

    def say(self, text: str) -> None:
        """Text from the lesson (and its plugins) is shown, its control characters never run."""
        self.stdout.write(visible(text).replace("•", "-") + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str | None:
        """One line from stdin after ``prompt`` (None: the input has ended).

        Raises :class:`InputEnds` where the input is no learner's typing."""
        unreadable = 0
        while True:
            self.stdout.write(prompt)
            self.stdout.flush()
            try:
                line, problem = self.read_line()
            except OSError:  # the terminal went away: the input has ended
                line, problem = "", None
            if problem is None:
                break
            self.say(f"{problem}; type it again.")
            # Lines too long are skipped at a bounded cost; lines that are not text, in a
            # row, are what a binary stream sends.
            unreadable = unreadable if problem == self._too_long() else unreadable + 1
            if unreadable >= MAX_UNREADABLE:
                raise InputEnds(
                    f"standard input sent {unreadable} lines in a row that are not text"
                )
        if not line:
            self.stdout.write("\n")
            self.stdout.flush()
            return None
        return line.rstrip("\r\n").replace("\t", " ").strip()

    def read_line(self) -> tuple[str, str | None]:
        """The next line, read in bounded chunks: ``("", None)`` at the end of the input,
        else the line and why it cannot be read as typed text (None: it can)."""
        raw = getattr(self.stdin, "buffer", None)
        if raw is None or not hasattr(raw, "readline"):
            return self._read_text()
        encoding = getattr(self.stdin, "encoding", None) or "utf-8"
        data = raw.readline(4 * MAX_LINE + 2)
        if not data:
            return "", None
        if not data.endswith(b"\n") and len(data) >= 4 * MAX_LINE + 2:
            self._skip(raw, len(data))
            return "\n", self._too_long()
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            return "\n", f"That line is not {encoding} text"
        if len(text.rstrip("\r\n")) > MAX_LINE:
            return "\n", self._too_long()
        return text, _text_problem(text.rstrip("\r\n"))

    def _read_text(self) -> tuple[str, str | None]:
        """As :meth:`read_line`, from a stream of text without bytes beneath (a test's)."""
        try:
            text = self.stdin.readline(MAX_LINE + 2)
        except UnicodeDecodeError:
            return "\n", "That line is not text this terminal's encoding can read"
        if not text:
            return "", None
        if not text.endswith("\n") and len(text) >= MAX_LINE + 2:
            self._skip(self.stdin, len(text))
            return "\n", self._too_long()
        if len(text.rstrip("\r\n")) > MAX_LINE:
            return "\n", self._too_long()
        return text, _text_problem(text.rstrip("\r\n"))

    def _skip(self, stream: Any, read: int) -> None:
        """Read the rest of a line too long to keep, a chunk at a time, and let it go."""
        while True:
            chunk = stream.readline(_CHUNK)  # bytes or text alike
            read += len(chunk)
            if not chunk or chunk.endswith(b"\n" if isinstance(chunk, bytes) else "\n"):
                return
            if read > GIVE_UP_BYTES:
                raise InputEnds(
                    f"standard input sent a line of more than {GIVE_UP_BYTES // 2**20} MiB"
                )

    @staticmethod
    def _too_long() -> str:
        return f"That line is longer than {MAX_LINE:,} characters, so it was not read"

    def run(self) -> int:
        session = self.session
        self.say(lesson_heading(session.lesson, session.intro()))
        if session.progress.finished:
            self.say(
                "You finished this lesson before. Type s to start it again from its first "
                "step (your answers are kept); Enter goes on from here."
            )
        self.show(whole=True)
        while True:
            quiz = self.waiting_quiz()
            try:
                line = self.ask(f"[{self.keys(quiz)}] > ")
            except InputEnds as ended:
                self.warn(session.save())
                self.stdout.flush()
                print(f"attn: {ended}; stopped (your place is saved)", file=sys.stderr, flush=True)
                return EXIT_USAGE
            if self.ended and (line is None or line.lower() in ("", "q", "quit")):
                return EXIT_OK
            if line is None or line.lower() in ("q", "quit"):
                self.warn(session.save())
                self.say("Stopped; your place is saved.")
                return EXIT_OK
            command = self.command(line, quiz)
            if self.ended and command not in ("s", "b"):
                self.say(f"Not a command here: '{echo(line)}'. {END_KEYS}.")
            elif command == "s":
                self.ended = False
                session.go(Position())
                self.say("Starting again from the first step; your answers are kept.")
                self.moved()
            elif command == "b" and self.ended:
                self.ended = False  # back to the last step, which is where the session is
                self.show(whole=True)
            elif command == "b":
                if session.back():
                    self.moved()
                else:
                    self.say("This is the first step.")
            elif command == "h":
                self.hint()
            elif command == "t":
                self.rows()
            elif not line:
                if quiz:
                    self.say("Skipped: this quiz is not answered; b goes back to it.")
                if self.forward():
                    self.ended = True
            elif quiz:
                self.answer(line)
            elif session.quiz() is not None:
                self.say("This quiz is answered already; press Enter to go on.")
            else:
                self.say(f"Not a command here: '{echo(line)}'. {self.keys(False)}.")

    def hint(self) -> None:
        """``h``: the quiz's next hint, or why there is none."""
        session = self.session
        quiz = session.quiz()
        if quiz is None:
            self.say("This step is not a quiz; there are no hints.")
        elif not quiz.hints:
            self.say("This quiz has no hints.")
        else:
            hint = session.hint()
            if hint is None:
                count = len(quiz.hints)
                said = "its hint is" if count == 1 else f"all {count} of its hints are"
                self.say(f"No more hints: {said} above.")
            else:
                shown = session.hints_shown.get(session.position.step, 0)
                self.say(f"Hint {shown}: {hint.strip()}")

    def rows(self) -> None:
        """``t``: every table of the step, row by row, each cell with its labels."""
        tables = self.tables()
        if not tables:
            self.say("This step has no table to read row by row.")
            return
        blocks = ["\n".join(row_lines(table)) for table in tables]
        self.say("\n\n".join(blocks))

    def tables(self) -> list[Table]:
        """The tables on screen (none inside a loop, whose sub-steps print their values)."""
        try:
            view = self.session.view()
        except Exception:  # the step cannot be computed: it said so
            return []
        return [] if view.loop is not None else list(view.step.tables)

    def hints_left(self) -> bool:
        quiz = self.session.quiz()
        if quiz is None:
            return False
        return self.session.hints_shown.get(self.session.position.step, 0) < len(quiz.hints)

    def command(self, line: str, quiz: bool) -> str:
        """``b``, ``h``, ``t`` or ``s`` (or ``back``, ``hint``, ``rows``, ``start again``),
        unless the line is a choice's letter at a quiz waiting for its answer: there the line
        is the answer (and ``s`` is always one there: a number or cells may not start again)."""
        word = " ".join(line.lower().split())
        command = {"back": "b", "hint": "h", "rows": "t", "start again": "s"}.get(word, word)
        if word in ("b", "h", "t", "s") and quiz and (word == "s" or self.letter_is_choice(word)):
            return ""
        return command if command in ("b", "h", "t", "s") else ""

    def letter_is_choice(self, letter: str) -> bool:
        step = self.session.quiz()
        if step is None or step.quiz_kind not in ("choice", "multiple"):
            return False
        return ord(letter) - ord("a") < len(step.choices)

    def keys(self, quiz: bool) -> str:
        """The keys that work now, and only those: 'h: hint' while the quiz has a hint left;
        at a choice quiz whose letters include b, h or t, the words 'back', 'hint', 'rows'."""
        if self.ended:
            return END_KEYS
        parts = ["type your answer"] if quiz else ["Enter: next"]
        if quiz and self.hints_left():
            parts.append("hint" if self.letter_is_choice("h") else "h: hint")
        if self.tables():
            parts.append(
                "rows: read the tables"
                if quiz and self.letter_is_choice("t")
                else "t: read the tables row by row"
            )
        parts.append("back: go back" if quiz and self.letter_is_choice("b") else "b: back")
        if self.session.progress.finished and not quiz:
            parts.append("s: start again")
        parts.append("q: quit")
        return " · ".join(parts)

    def waiting_quiz(self) -> bool:
        """Whether the step on screen is a quiz not answered yet."""
        return self.session.quiz() is not None and self.session.recorded() is None

    def warn(self, warning: str | None) -> None:
        """Say ``warning`` on stderr, once: the same warning again is not repeated."""
        if warning and warning not in self.warned:
            self.warned.add(warning)
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
        if isinstance(moved, Failed):
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
            self.say(f"The loop failed here: {moved.error}")
            self.say("Press Enter again to go on to the next step.")
            return False
        if isinstance(moved, AtEnd):
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
            built = loop.stage
            first = next(iter(built.tensors), None) if built is not None else None
            axes = loop_matrix_axes(built.axes.get(first)) if built is not None and first else None
            lines.extend(substep_lines(loop.sub, loop.tokens, query, loop.shown, axes))
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
        """The end: the score, where the checkpoints are (read already: not said again), the
        next lesson; then Enter quits, ``s`` starts again, ``b`` goes back."""
        session = self.session
        self.say("--- End of the lesson.")
        summary = session.summary()
        score, _, _ = summary.partition("\n\nWhat it covered:")
        self.say(score)
        checkpoints = [
            str(number + 1)
            for number, step in enumerate(session.steps)
            if step.kind == "checkpoint"
        ]
        if checkpoints:
            where = "step" if len(checkpoints) == 1 else "steps"
            self.say(f"What it covered is in its checkpoint at {where} {', '.join(checkpoints)}.")
        following = session.next_lesson()
        if following is not None:
            self.say(f"Next: lesson {following[1]} (attn lesson run {following[0].stem} -i)")


def run_interactive(
    session: LessonSession, stdin: TextIO, stdout: TextIO, warning: str | None = None
) -> int:
    """Take ``session``'s lesson with lines from ``stdin``; the exit status (0, or 2 where
    the input is no learner's typing). ``warning``: the progress store's, said once."""
    reader = Interactive(session, stdin, stdout)
    reader.warn(warning)
    return reader.run()
