"""One learner's way through one lesson: position, moves, answers, progress. No Textual.

A :class:`LessonSession` is made by :func:`open_lesson` (which reads and
checks the file, loads the plugins and computes every step once) and bound to
the learner's progress with :meth:`LessonSession.attach`. Then a front end
only asks and forwards:

- :meth:`~LessonSession.view`: the current step, complete (:class:`LessonView`);
- :meth:`~LessonSession.next`, :meth:`~LessonSession.back`,
  :meth:`~LessonSession.go`, :meth:`~LessonSession.loop_end`: moves (a loop's
  sub-steps included), each returning a :class:`~tracer.session.moves.Move`;
- :meth:`~LessonSession.answer` and :meth:`~LessonSession.hint`: the quiz on screen
  (:meth:`~LessonSession.draft` keeps what is marked or typed but not checked yet);
- :meth:`~LessonSession.save`, :meth:`~LessonSession.summary`,
  :meth:`~LessonSession.next_lesson`, :meth:`~LessonSession.changed` and
  :func:`reopen` (reload on save, keeping the position and the answers).

Work that may take long (a loop's next sub-step, a loop's end): a front end with a
user interface asks for the move with ``wait=False`` and gets it back as
:class:`~tracer.session.moves.Waiting` on a :class:`~tracer.session.moves.Pending`,
which it runs off its drawing thread (with cancel and progress) and then finishes; a
text front end just calls the move, which computes what it needs.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.asked import Decider, loop_deciders
from tracer.lessons.check import open_checked
from tracer.lessons.grading import ECHO_RESPONSE, ascii_index, echo, parse_choices
from tracer.lessons.grading import grade as grade_response
from tracer.lessons.hiding import (
    SubStepView,
    Table,
    quiz_has_tables,
    quiz_id,
    secrets,
    substep_view,
)
from tracer.lessons.loader import find_lessons, resolve_lesson, shipped_dir
from tracer.lessons.model import Lesson, LessonStep, Loop, Quiz
from tracer.lessons.unsaid import unsaid
from tracer.lessons.views import (
    StepView,
    answer_shown,
    lesson_intro,
    lesson_summary,
    live,
    loop_at,
    quiz_at,
    step_heading,
    step_label,
    step_view,
)
from tracer.plugin_host import PluginHost
from tracer.render.labels import loop_matrix_axes
from tracer.session.moves import AT_END, MOVED, Failed, Move, Pending, Refused, Waiting
from tracer.session.places import LoopWords, loop_words
from tracer.session.progress import LessonProgress, ProgressStore, QuizAnswer, lesson_key
from tracer.session.walk import COUNT_STEPS, LoopState, start_loop, warm_up
from tracer.tracing.stepper import LoopCanvas
from tracer.variant import Stage, SubStep

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.lesson_runner import Resolved as Resolved

    LessonRun = LessonRunner
    """A lesson's every step computed (its runs cached): what the whole-lesson text front ends
    (``--plain``, Markdown and notebook export) read the lesson views from. The session's
    :attr:`LessonSession.runner`, or one of :func:`lesson_run`'s making."""


@dataclass(frozen=True)
class Position:
    """Where the learner is: a step (0-based) and, inside a loop step, a sub-step (0-based)."""

    step: int = 0
    sub: int = 0


@dataclass(frozen=True)
class Verdict:
    """What answering a quiz gave: the grade, and what to tell the learner."""

    response: str
    right: bool | None
    """None: the response is no answer at all (``message`` says what to type); nothing
    was recorded or revealed."""
    message: str = ""
    said: str = ""
    """The response as the learner reads it (a choice's text for its number)."""
    answer: str = ""
    """The right answer as shown, with a choice's letter and the tolerance (empty while
    ``right`` is None)."""
    explanation: str = ""
    value: str = ""
    """The right answer alone (a choice's text, a number, cells), as the app's quiz says it."""

    @property
    def line(self) -> str:
        """The verdict in words, without symbols: what a text front end prints."""
        if self.right is None:
            return f"Not an answer: {self.message}."
        if self.right:
            return f"Right: {self.answer}."
        return f"Not quite: you answered {self.said}; the answer is {self.answer}."


@dataclass(frozen=True)
class QuizPrompt:
    """A quiz as shown: its question, choices, the hints asked for so far, and any verdict."""

    quiz: Quiz
    id: str
    question: str
    choices: tuple[str, ...]
    how: str
    """How to answer it, in words (what to type)."""
    hints: tuple[str, ...]
    """The hints shown so far (the learner asks for them one at a time)."""
    hints_left: int
    verdict: Verdict | None = None
    """How it was answered (None: not yet; nothing about the answer is in this view)."""


@dataclass(frozen=True)
class LoopView:
    """Where a loop step is: the sub-step on screen, its number and the loop's length."""

    sub: SubStep
    number: int
    count: int | None
    """How many sub-steps the loop has, once known."""
    tokens: tuple[str, ...]
    canvas: LoopCanvas | None = None
    """The matrix the loop is filling, up to this sub-step (a loop with a declared dot
    product); None: the loop has none."""
    stage: Stage | None = None
    """The stage the loop builds, once its run has got there (its axes name the loop's
    matrix); never run here to find it."""
    shown: SubStepView | None = None
    """What of the sub-step may be shown (the walk's: no unanswered quiz's answer in its
    tensors, the loop's matrix, its formula or arithmetic); None: all of it."""
    at_hand: Callable[[int], tuple[SubStep, ...] | None] = field(
        default=lambda _limit: None, repr=False, compare=False
    )
    """``at_hand(limit)``: every sub-step of the loop, if its end is known, it has at most
    ``limit`` of them and all are computed (None otherwise): nothing runs. A drawing
    measures their position texts to hold the tallest one's height."""

    @property
    def axes(self) -> tuple[str, ...] | None:
        """The axes of the matrix the loop fills, from the stage it builds (None until the run
        has got there): its positions name tokens only along a token axis."""
        stage = self.stage
        if stage is None or not stage.tensors:
            return None
        return loop_matrix_axes(stage.axes.get(next(iter(stage.tensors))))

    @property
    def words(self) -> LoopWords:
        """Where the loop is, in words ("pair 8 of 36 · position (1, 3), counted from 0" and
        the tokens it pairs), with what may not be said as "?"."""
        number, count = self.place
        return loop_words(self.sub, number, count, self.tokens, self.axes)

    @property
    def place(self) -> tuple[int | None, int | None]:
        """The sub-step's number from 1 and the loop's length as they may be said (None:
        unknown, or it would state an unanswered quiz's answer)."""
        if self.shown is not None and not self.shown.count_shown:
            return None, None
        return self.number + 1, self.count


@dataclass(frozen=True)
class Ending:
    """What the end of a lesson says: its title, the summary, and the lesson after it."""

    title: str
    summary: str
    following: Path | None = None
    """The next lesson's file in the picker's order (None: this was the last)."""
    following_title: str | None = None


@dataclass(frozen=True)
class LessonView:
    """Everything a front end draws for the current step, decided by the session."""

    position: Position
    total: int
    heading: str
    step: StepView
    """The walk's view: prose and tables (a quiz's answer cells hidden until answered)."""
    loop: LoopView | None = None
    quiz: QuizPrompt | None = None

    @property
    def kind(self) -> str:
        return self.step.kind

    @property
    def tables(self) -> tuple[Table, ...]:
        return self.step.tables


def open_lesson(
    spec: str | Path,
    *,
    lesson_dirs: Sequence[str] = (),
    plugin_dirs: Sequence[str] = (),
    host: PluginHost | None = None,
    highlight: Callable[[str], object] | None = None,
    warm: bool = True,
) -> LessonSession:
    """Read lesson ``spec`` (a name, number or path), ready to be taken.

    ``warm``: compute every step now (a loading worker), so moving only draws;
    ``highlight`` is then called with each source file the lesson shows.
    Raises :class:`~tracer.lessons.loader.LessonError` (exit status 1) with every
    problem ``attn lesson check`` reports for a lesson it refuses (the one gate,
    :func:`~tracer.lessons.check.open_checked`), and :class:`~tracer.errors.UsageError`
    for a lesson that does not exist.
    """
    path = resolve_lesson(spec, lesson_dirs)
    host = host if host is not None else PluginHost(plugin_dirs)
    mtime = file_time(path)
    checked = open_checked(path, host, extra_dirs=lesson_dirs)
    assert checked.lesson is not None
    session = start_session(
        checked.lesson,
        host,
        path,
        lesson_dirs=lesson_dirs,
        warm=warm,
        highlight=highlight,
        runner=checked.runner,
    )
    session.mtime = mtime
    return session


def start_session(
    lesson: Lesson,
    host: PluginHost,
    path: Path,
    *,
    lesson_dirs: Sequence[str] = (),
    warm: bool = False,
    highlight: Callable[[str], object] | None = None,
    runner: LessonRunner | None = None,
) -> LessonSession:
    """A session over a lesson already read from ``path`` (and checked by the caller:
    :func:`open_lesson` does both); ``runner``: the one that checked it."""
    # Here, not at the top: the runner imports torch, and the app imports this module before
    # its first frame (the lesson itself loads in a worker).
    from tracer.lessons.lesson_runner import LessonRunner

    runner = runner if runner is not None else LessonRunner(lesson, host)
    loops = warm_up(lesson, runner, highlight=highlight) if warm else {}
    key = lesson_key(path, shipped_dir())
    return LessonSession(
        lesson, runner, host, path, key, file_time(path), loops, tuple(lesson_dirs)
    )


def lesson_run(lesson: Lesson, host: PluginHost) -> LessonRun:
    """A run of ``lesson`` without a learner (imports torch): what ``--plain`` and the
    exports read when no session lends its own. Its owner closes it."""
    from tracer.lessons.lesson_runner import LessonRunner

    return LessonRunner(lesson, host)


def reopen(
    old: LessonSession, *, highlight: Callable[[str], object] | None = None
) -> LessonSession:
    """The lesson file read again (it was saved): same learner, same place if it still exists."""
    new = open_lesson(old.path, lesson_dirs=old.lesson_dirs, host=old.host, highlight=highlight)
    new.adopt(old)
    return new


def file_time(path: Path) -> float:
    with contextlib.suppress(OSError):
        return path.stat().st_mtime_ns / 1e9
    return 0.0


@dataclass
class LessonSession:
    """A lesson being taken: its runner and loops, the learner's position and progress."""

    lesson: Lesson
    runner: LessonRunner
    host: PluginHost
    path: Path
    key: str
    """The key of this lesson in the progress file (:func:`~tracer.session.progress.lesson_key`)."""
    mtime: float = 0.0
    loops: dict[int, LoopState] = field(default_factory=dict)
    lesson_dirs: tuple[str, ...] = ()
    position: Position = Position()
    progress: LessonProgress = field(default_factory=LessonProgress)
    store: ProgressStore | None = None
    hints_shown: dict[int, int] = field(default_factory=dict)
    """Per quiz step, how many of its hints the learner has asked for."""
    warning: str | None = None
    """The progress store's last warning (the disk refused), for the front end to say."""
    drafts: dict[str, str] = field(default_factory=dict)
    """Per quiz id, what the learner marked or typed but has not checked yet (see
    :meth:`draft`): kept while they step away and back, never graded or saved to disk."""
    saving: threading.RLock = field(
        default_factory=threading.RLock, init=False, repr=False, compare=False
    )
    """Held while the progress is changed or saved: a front end may save on another thread
    (:class:`~tracer.session.saver.BackgroundSaver`), and each save writes the position
    it reads under this lock, so an older position never lands after a newer one."""
    step_views: dict[tuple[int, frozenset[str]], StepView] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """(step, quizzes answered) -> what that step shows then (:meth:`step_view`)."""
    loop_deciding: dict[tuple[int, frozenset[str]], tuple[Decider, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """(loop step, quizzes answered) -> the deciding rows it works out: the same for each of
    its sub-steps, which a learner steps through one key at a time."""

    # Progress -------------------------------------------------------------------------

    def attach(self, store: ProgressStore | None, *, resume: bool = True) -> str | None:
        """Take the learner's saved progress from ``store`` (resuming their place if ``resume``).

        Returns the store's warning (a damaged file set aside), if any.
        """
        self.store = store
        saved = store.get(self.key) if store is not None else None
        self.progress = saved or LessonProgress()
        self._describe_progress()
        if resume and saved is not None and saved.step < len(self.lesson.steps):
            self.go(Position(saved.step, saved.sub))
        return store.warning if store is not None else None

    def adopt(self, old: LessonSession) -> None:
        """Continue ``old``'s learner in this (reloaded) lesson."""
        self.store, self.progress, self.saving = old.store, old.progress, old.saving
        self.hints_shown = dict(old.hints_shown)
        self.drafts = dict(old.drafts)
        self._describe_progress()
        steps = len(self.lesson.steps)
        here = old.position
        self.go(here if here.step < steps else Position(max(steps - 1, 0)))

    def _describe_progress(self) -> None:
        self.progress.title = self.lesson.title
        self.progress.steps = len(self.lesson.steps)

    def save(self) -> str | None:
        """Write the position and the answers to the progress file; a warning if it refused."""
        if self.store is None:
            return None
        with self.saving:  # the position as it is now, whichever thread saves it
            position = self.position
            self.progress.step = position.step
            self.progress.sub = position.sub
            return self.store.save(self.key, self.progress)

    def finish(self) -> str | None:
        """The lesson was read to its end: marked finished and saved (warning, if any)."""
        if self.progress.finished:
            return None
        with self.saving:
            self.progress.finished = True
            self.progress.seen = len(self.lesson.steps)
            self.warning = self.save()
        return self.warning

    def summary(self) -> str:
        """The end-of-lesson text: the quiz score and what the lesson covered."""
        return self.text(lesson_summary(self.lesson, self.progress.answers))

    def ending(self) -> Ending:
        """The end of the lesson: the summary (quiz score, what it covered) and the way on."""
        following = self.next_lesson()
        if following is None:
            return Ending(self.lesson.title, self.summary())
        return Ending(self.lesson.title, self.summary(), *following)

    def contents(self) -> tuple[tuple[str, str], ...]:
        """Each step's label and tip, in order: the timeline's entries and the palette's."""
        return tuple(step_label(n + 1, step) for n, step in enumerate(self.lesson.steps))

    def quiz_alone(self) -> bool:
        """Whether the step on screen is a quiz with no tables (the question is all it shows)."""
        number = self.position.step
        return self.steps[number].kind == "quiz" and not quiz_has_tables(self.lesson, number)

    def next_lesson(self) -> tuple[Path, str] | None:
        """The lesson after this one in the picker's order (its file and its title), if any."""
        try:
            refs = find_lessons(self.lesson_dirs)
        except TracerError:
            return None
        here = self.path.resolve()
        for number, ref in enumerate(refs):
            if ref.path.resolve() == here and number + 1 < len(refs):
                after = refs[number + 1]
                return after.path, f"{after.number}. {after.title or after.name}"
        return None

    def changed(self) -> bool:
        """Whether the lesson file was saved since it was read (then :func:`reopen` it)."""
        mtime = file_time(self.path)
        if mtime == self.mtime:
            return False
        self.mtime = mtime
        return True

    def close(self) -> None:
        """Stop every run this lesson started (a plugin's worker processes stop now)."""
        self.runner.close()
        for state in self.loops.values():
            state.stepper.close()

    def file_read(self) -> None:
        """Take the lesson file as read now (it is about to be read again on purpose)."""
        self.mtime = file_time(self.path)

    # Moving ---------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[LessonStep, ...]:
        return self.lesson.steps

    def loop(self, number: int) -> LoopState | None:
        """Loop step ``number``'s stepper, at its first sub-step (started on first use)."""
        step = loop_at(self.lesson, number)
        if step is None:
            return None
        state = self.loops.get(number)
        if state is None:
            state = start_loop(self.runner, step)
            if state is not None:
                self.loops[number] = state
        return state

    def count_loop(self, number: int) -> int | None:
        """How many sub-steps loop step ``number`` has, running it to its end if that takes
        at most :data:`~tracer.session.walk.COUNT_STEPS` (what loading does for the app)."""
        state = self.loop(number)
        return state.count_within(COUNT_STEPS) if state is not None else None

    def loop_code(self, number: int, *, from_before: bool) -> tuple[str, tuple[int, ...]] | None:
        """The file and lines loop step ``number`` shows on entering it: its first sub-step
        coming from before it, its last coming back. Only what its stepper already holds (a
        front end draws the code ahead with it); None where finding out would run the variant."""
        state = self.loops.get(number)
        if state is None:
            return None
        index = state.first + (0 if from_before else state.last_sub())
        if not state.stepper.known(index):
            return None
        sub = state.stepper.get(index)
        if not isinstance(sub, SubStep) or sub.source_file is None:
            return None
        return sub.source_file, tuple(sub.lines)

    def go(self, position: Position) -> Move:
        """Move to ``position`` (a sub-step past a loop's known end: its last); :class:`AtEnd`
        if there is no such step."""
        if not 0 <= position.step < len(self.steps):
            return AT_END
        sub = 0
        if loop_at(self.lesson, position.step) is not None:
            try:
                state = self.loop(position.step)
            except Exception:  # the view says what failed
                state = None
            sub = 0 if state is None else state.clamp(position.sub)
        self.position = Position(position.step, sub)
        self.progress.seen = max(self.progress.seen, position.step + 1)
        return MOVED

    def go_to(self, number: int) -> Move:
        """Jump to step ``number`` (its first sub-step)."""
        return self.go(Position(number))

    def first(self) -> Move:
        """To the lesson's first step."""
        return self.go(Position())

    def last(self) -> Move:
        """To the lesson's last step (a loop there: its first sub-step)."""
        return self.go(Position(len(self.steps) - 1))

    def next(self, *, wait: bool = True) -> Move:
        """One step on (inside a loop, one sub-step).

        :class:`~tracer.session.moves.Moved`; :class:`~tracer.session.moves.AtEnd` at the
        last step (the lesson is then finished and saved); :class:`~tracer.session.moves.Failed`:
        the variant raised inside the loop, staying here. ``wait`` False: a loop's next
        sub-step not yet computed is :class:`~tracer.session.moves.Waiting` on its work.
        """
        here = self.position
        step = loop_at(self.lesson, here.step)
        state = self.loops.get(here.step) if step is not None else None
        if step is not None and state is not None and state.may_go_on(here.sub):
            if not wait:
                # Even one sub-step runs off the drawing thread: a variant that sleeps or
                # never returns must leave the front end's keys working.
                after = Position(here.step, here.sub + 1)
                pending = self._pending(after, lambda: self.next(wait=False))
                if pending is not None:
                    return Waiting(pending)
            following = state.after(here.sub, step.stage)
            if following == "next":
                return self.go(Position(here.step, here.sub + 1))
            if following == "failed" and state.stepper.error is not None:
                return Failed(state.stepper.error)
        if here.step + 1 >= len(self.steps):
            self.finish()
            return AT_END
        return self.go(Position(here.step + 1))

    @property
    def loop_error(self) -> BaseException | None:
        state = self.loops.get(self.position.step)
        return state.stepper.error if state is not None else None

    def before(self) -> Position | None:
        """Where :meth:`back` goes: the sub-step before, or the step before (into a loop,
        its last sub-step shown); None at the first step."""
        here = self.position
        if here.sub > 0:
            return Position(here.step, here.sub - 1)
        if here.step == 0:
            return None
        state = self.loops.get(here.step - 1)
        return Position(here.step - 1, state.last_sub() if state is not None else 0)

    def back(self, *, wait: bool = True) -> Move:
        """One step back (inside a loop, one sub-step); :class:`AtEnd` at the first step.
        ``wait`` False: a sub-step of this loop no longer at hand is :class:`Waiting`."""
        target = self.before()
        if target is None:
            return AT_END
        if not wait and target.step == self.position.step:
            pending = self._pending(target, lambda: self.go(target))
            if pending is not None:
                return Waiting(pending)
        return self.go(target)

    def _pending(self, position: Position, then: Callable[[], Move]) -> Pending[None] | None:
        """The work showing ``position`` needs first (a loop's sub-step no longer or not yet
        computed), finished by ``then``; None if it needs none."""
        state = self.loops.get(position.step)
        if state is None or loop_at(self.lesson, position.step) is None:
            return None
        index = state.first + position.sub
        stepper = state.stepper
        if stepper.known(index) or (stepper.total is not None and index >= stepper.total):
            return None

        def work(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> None:
            with contextlib.suppress(IndexError):  # the loop ended first: the move says so
                stepper.get(index, cancelled=cancelled, progress=progress)

        return Pending("Running the loop", work, lambda _: then())

    def _find_loop_end(self, state: LoopState, cancelled: Callable[[], bool] | None = None,
                       progress: Callable[[int], None] | None = None) -> int | None:  # fmt: skip
        """Run loop ``state`` to its end (may take long: a worker's job); the last sub-step."""
        if state.last is None and state.limit is None:
            stepper = state.stepper
            end = stepper.next_stage(state.first, cancelled=cancelled, progress=progress)
            state.last = (end if end is not None else (stepper.total or 1)) - 1
        last = state.find_end(cheap_only=False)
        return None if last is None else last - state.first

    def loop_end(self, *, wait: bool = True) -> Move:
        """To the last sub-step of the loop on screen (:class:`Refused` if this step is no
        loop). ``wait`` False: finding the end is :class:`Waiting`, however short."""
        number = self.position.step
        if loop_at(self.lesson, number) is None:
            return Refused("This step is not a loop")
        state = self.loops.get(number)
        if state is None:
            return AT_END

        def work(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int | None:
            return self._find_loop_end(state, cancelled, progress)

        def finish(last: int | None) -> Move:
            return AT_END if last is None else self.go(Position(number, last))

        if wait:
            return finish(work(_never, _quiet))
        return Waiting(Pending("Running to the end of the loop", work, finish))

    def _at_hand(self, state: LoopState, limit: int) -> tuple[SubStep, ...] | None:
        stepper = state.stepper
        if state.last is None:
            return None
        every = range(state.first, state.last + 1)
        if not 0 < len(every) <= limit or not all(stepper.known(i) for i in every):
            return None
        found = tuple(stepper.get(i) for i in every)
        return found if all(isinstance(sub, SubStep) for sub in found) else None  # type: ignore[return-value]

    def text(self, prose: str, quiz: Quiz | None = None) -> str:
        """The author's prose as shown: its live values filled in from the run, and no
        unanswered quiz's answer in it (a number that would give one away reads "?", a
        sentence that states one in words is said once that quiz is answered). ``quiz``: the
        quiz the prose belongs to (its question, choices, explanation), whose own words name
        what it asks: its own statement is not left out of them (its right choice is one),
        but it is out of its hints, which are read before it is answered."""
        answered = frozenset(self.progress.answers)
        kept = secrets(self.lesson, self.runner, self.position.step, answered)
        said = unsaid(self.lesson, self.runner, self.position.step, answered)
        if quiz is not None and prose not in quiz.hints:
            said = tuple(one for one in said if one.quiz is not quiz)
        return live(self.runner, prose, quiz, kept, said)

    def intro(self) -> str:
        """The lesson's summary as shown: no unanswered quiz's answer in it."""
        return lesson_intro(self.lesson, self.runner, frozenset(self.progress.answers))

    # Quizzes --------------------------------------------------------------------------

    def quiz(self) -> Quiz | None:
        """The step on screen, if it is a quiz."""
        return quiz_at(self.lesson, self.position.step)

    def recorded(self, number: int | None = None) -> QuizAnswer | None:
        """The saved answer to quiz step ``number`` (default: the one on screen)."""
        number = self.position.step if number is None else number
        quiz = quiz_at(self.lesson, number)
        return self.progress.answers.get(quiz_id(number, quiz)) if quiz is not None else None

    def draft(self) -> str:
        """The unchecked answer to the quiz on screen ("" if none, answered, or no quiz).

        Written as a response is: the typed text, or the marked choices' numbers (``"1 3"``).
        """
        quiz = self.quiz()
        if quiz is None or self.recorded() is not None:
            return ""
        return self.drafts.get(quiz_id(self.position.step, quiz), "")

    def keep_draft(self, text: str) -> None:
        """Remember ``text`` as the quiz on screen's unchecked answer (nothing if answered)."""
        quiz = self.quiz()
        if quiz is None or self.recorded() is not None:
            return
        key = quiz_id(self.position.step, quiz)
        if text:
            self.drafts[key] = text
        else:
            self.drafts.pop(key, None)

    def hint(self) -> str | None:
        """The quiz's next hint (None: it has no more, or this is no quiz)."""
        quiz = self.quiz()
        if quiz is None:
            return None
        number = self.position.step
        shown = self.hints_shown.get(number, 0)
        if shown >= len(quiz.hints):
            return None
        self.hints_shown[number] = shown + 1
        return self.step_view(number).hints[shown]  # no hint states another quiz's answer

    def answer(self, response: str) -> Verdict:
        """Grade ``response`` to the quiz on screen; a real answer is recorded and saved.

        A response that is no answer at all (``right is None``) reveals nothing and
        records nothing: the learner tries again. An answered quiz keeps its first answer.
        """
        quiz = self.quiz()
        if quiz is None:
            return Verdict(response, None, "this step is not a quiz")
        number = self.position.step
        previous = self.recorded()
        if previous is not None:
            return self._verdict(quiz, previous.response, previous.right)
        graded = grade_response(quiz, self.runner.answer(quiz), response)
        if graded.right is None:
            return Verdict(response, None, graded.message)
        with self.saving:  # not while another thread writes the answers out
            self.progress.answers[quiz_id(number, quiz)] = QuizAnswer(response, graded.right)
            self.warning = self.save()
        self.drafts.pop(quiz_id(number, quiz), None)
        return self._verdict(quiz, response, graded.right)

    def _verdict(self, quiz: Quiz, response: str, right: bool) -> Verdict:
        # Cut to a quotable length: a recorded response (a progress file) may be any text.
        said = echo(response, ECHO_RESPONSE)
        number = ascii_index(response.strip())
        if quiz.quiz_kind == "choice" and number is not None:
            if 0 < number <= len(quiz.choices):
                said = live(self.runner, quiz.choices[number - 1], quiz)
        elif quiz.quiz_kind == "multiple":
            picked = parse_choices(quiz.choices, response)
            if picked:  # letters or numbers, said as the choices' texts
                said = ", ".join(live(self.runner, quiz.choices[i], quiz) for i in picked)
        # Through the session's text: no other unanswered quiz's answer in it.
        explanation = self.text(quiz.explanation, quiz).strip() if quiz.explanation else ""
        shown = answer_shown(quiz, self.runner)
        value = self.runner.answer_text(quiz)
        return Verdict(response, right, "", said, shown, explanation, value)

    # The view -------------------------------------------------------------------------

    def step_view(self, number: int) -> StepView:
        """Step ``number`` as the learner may see it now: what they have answered decides what
        it shows (no other quiz's answer). Computed once for each set of answers."""
        answered = frozenset(self.progress.answers)
        key = (number, answered)
        shown = self.step_views.get(key)
        if shown is None:
            shown = step_view(self.lesson, self.runner, number, answered)
            if len(self.step_views) >= KEPT_STEP_VIEWS:
                del self.step_views[next(iter(self.step_views))]
            self.step_views[key] = shown
        return shown

    def prepare_nearby(self) -> None:
        """Compute the views of the steps either side of this one ahead (a front end calls it
        once a step is drawn), so that moving to one only draws it. A step that fails is
        left to fail when it is shown, where its error is said."""
        here = self.position.step
        for number in (here + 1, here - 1):
            if 0 <= number < len(self.lesson.steps):
                # Not kept when it fails: tried again after the next draw.
                with contextlib.suppress(Exception):
                    self.step_view(number)

    def view(self) -> LessonView:
        """The current step, complete: what every front end draws.

        Raises what computing the step raised (a step the variant cannot give): the
        front end says so and stays.
        """
        here = self.position
        number = here.step
        # What the learner has answered decides what the step may show (no other quiz's answer).
        shown = self.step_view(number)
        step = shown.step
        loop = None
        prompt = None
        if isinstance(step, Loop):
            state = self.loop(number)
            if state is None:
                raise LookupError(f"variant '{step.variant}' has no loop building '{step.stage}'")
            loop = self._loop_view(number, step, state, here.sub)
        elif isinstance(step, Quiz):
            previous = self.recorded(number)
            verdict = self._verdict(step, previous.response, previous.right) if previous else None
            count = self.hints_shown.get(number, 0)
            prompt = QuizPrompt(
                step,
                quiz_id(number, step),
                shown.text,
                shown.choices,
                how_to_answer(step),
                shown.hints[:count],
                len(step.hints) - count,
                verdict,
            )
        return LessonView(here, len(self.steps), step_heading(step), shown, loop, prompt)

    def _loop_view(self, number: int, step: Loop, state: LoopState, at: int) -> LoopView:
        """Loop step ``number`` at sub-step ``at``, as the learner may see it now."""
        sub = state.stepper.get(state.first + at)
        assert isinstance(sub, SubStep)
        trace = self.runner.trace(step.variant, step.options, step.query)
        built = next((stage for stage in trace.stages if stage.name == step.stage), None)
        count = state.count_known()
        answered = frozenset(self.progress.answers)
        kept = secrets(self.lesson, self.runner, number, answered)
        canvas = state.stepper.canvases.get(sub.stage)
        deciding = self.loop_deciding.get((number, answered))
        if deciding is None:
            deciding = loop_deciders(self.lesson, self.runner, number, answered)
            self.loop_deciding[number, answered] = deciding
        said = substep_view(sub, kept, canvas, count, deciding)
        at_hand = functools.partial(self._at_hand, state)
        return LoopView(sub, at, count, state.stepper.tokens, canvas, built, said, at_hand)

    def loop_view_ahead(self, number: int, *, from_before: bool) -> LoopView | None:
        """Loop step ``number`` as moving onto it will show it: its first sub-step coming
        from before it, its last coming back (as :meth:`next` and :meth:`back` go). Only
        from what its stepper already holds, None where finding out would run the loop: a
        front end draws it ahead while the learner reads the step beside it."""
        step = loop_at(self.lesson, number)
        state = self.loops.get(number)
        if step is None or state is None:
            return None
        at = 0 if from_before else state.clamp(state.last_sub())
        if not state.stepper.known(state.first + at):
            return None
        return self._loop_view(number, step, state, at)


KEPT_STEP_VIEWS = 64
"""Step views a session keeps (the oldest goes first)."""


def how_to_answer(quiz: Quiz) -> str:
    """What to type to answer ``quiz``, in words (the text front end's prompt)."""
    if quiz.quiz_kind == "choice":
        return f"Type a choice's letter or number (a to {chr(ord('a') + len(quiz.choices) - 1)})."
    if quiz.quiz_kind == "multiple":
        return "More than one may be right: type every right choice's letter, like a, c."
    if quiz.quiz_kind == "cells":
        return (
            "Type every cell you select as row,column (tokens or 0-based indices), separated by ;."
        )
    if quiz.relative:
        within = f" (within {quiz.tolerance * 100:g}%)"
    else:
        within = f" (within {quiz.tolerance:g})" if quiz.tolerance else ""
    # No example number: an example could itself be a right answer (0.95 for 0.9544 ± 0.005).
    return f"Type a number{within}, with a decimal point or a decimal comma."


def _never() -> bool:
    return False


def _quiet(_done: int) -> None:
    return None
