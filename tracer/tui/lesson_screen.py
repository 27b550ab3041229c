"""``attn lesson NAME``: a lesson, step by step, with live tensors, loops, comparisons and quizzes.

The screen routes: the lesson's :class:`~tracer.session.lesson.LessonSession`
holds the position (a step and, inside a ``loop`` step, a sub-step), moves,
grades and saves; :class:`~tracer.tui.lesson_drawing.LessonDrawing` draws the
session's view of the step. The screen runs what takes long in workers
(loading, a loop's sub-steps, reloading), forwards keys, and picks when to
save (after the frame, on a writer thread). The lesson file is watched: saving it in an editor
reloads it in place, keeping the position if that step still exists; a lesson
with problems shows them in a modal and keeps the last good version on screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Header
from textual.worker import Worker, WorkerState

from tracer.lessons.model import Quiz
from tracer.lessons.views import STEP_ICONS as STEP_ICONS
from tracer.lessons.views import step_label
from tracer.sanitize import visible
from tracer.session.lesson import LessonSession, Position, open_lesson
from tracer.session.moves import AtEnd, Failed, Move, Refused, Waiting
from tracer.session.progress import ProgressStore
from tracer.tui.commands import PaletteCommand, lesson_commands
from tracer.tui.footer import FooterLine
from tracer.tui.heap import COLLECTOR, collect_before_freezing, freeze_heap, thaw_heap
from tracer.tui.lesson_drawing import (
    LessonDrawing,
    focus_highlight,
    lesson_panes,
    loop_position,
    warm_app,
)
from tracer.tui.modals import ErrorScreen, LessonEndScreen
from tracer.tui.quiz_view import QUIZ_KEYS, QuizView
from tracer.tui.saving import SaveWarning, screen_saver
from tracer.tui.source_view import prepare_source
from tracer.tui.step_screen import StepScreen
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.timeline import Timeline

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost

__all__ = ["LessonScreen", "Position", "focus_highlight", "loop_position", "step_label"]

WATCH_SECONDS = 0.5
PREPARE_AFTER = 0.05
"""Seconds after a step is drawn before the steps either side are computed ahead."""
CHOOSE = "Quiz: pick a choice, or start typing a number"


class LessonScreen(StepScreen):
    """Narration, source, tensors and quizzes for one lesson."""

    # Nothing focused at first: panes come and go between steps, and focus moving off a
    # hidden pane would rebuild the footer on every step. Tab focuses a pane to scroll it.
    AUTO_FOCUS = ""

    HELP = (
        "Step through the lesson with → and ←. Loop steps have sub-steps (pair 3 of 36): e "
        "jumps to the end of the loop. Answer quizzes in place; auto-play stops at them. "
        "Your place and answers are saved; editing the lesson file reloads it. z: overview "
        "or numbers; w: a query's weight to each key.\n\n" + QUIZ_KEYS
    )

    TYPING_HIDES = frozenset(
        {"loop_end", "autoplay", "pause", "zoom", "tokens", "next_tensor", "start", "end",
         "faster", "slower", "choose", "answer"}
    )  # fmt: skip
    """Actions whose keys type into a quiz's answer box while it has the focus (not offered)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *[
            Binding(str(n), f"choose({n})", CHOOSE, show=False, id=f"attn.digit_{n}")
            for n in range(10)
        ],
        # i or Enter: back into the quiz's box (or onto its choices) after Esc left it. Not in
        # the footer: with the focus in the quiz, the footer shows the quiz's own keys, and
        # the quiz's hint line says how to answer it.
        Binding("i,enter", "answer", "Answer", id="attn.answer", show=False),
    ]

    def __init__(
        self,
        spec: str | Path,
        *,
        plugin_dirs: Sequence[str] = (),
        lesson_dirs: Sequence[str] = (),
        resume: bool = True,
        store: ProgressStore | None = None,
        host: PluginHost | None = None,
        watch: bool = True,
    ) -> None:
        super().__init__()
        self.spec = spec
        self.plugin_dirs = tuple(plugin_dirs)
        self.lesson_dirs = tuple(lesson_dirs)
        self.resume = resume
        self.store = store
        self._host = host
        self.watch_file = watch
        self.session: LessonSession | None = None
        """The lesson being taken: position, moves, answers and progress are the session's."""
        self._reload_error: ErrorScreen | None = None
        self._latest_reload: Worker[LessonSession] | None = None
        """The reload of the latest save: an earlier one that ends after it is ignored."""
        self.drawing = LessonDrawing(self, lambda: self.session)
        """Draws the session's view of each step into the panes."""
        self._saver = screen_saver(self, self._save_now)
        """Saves the position off the UI thread; flushed when the screen goes."""
        self._preparing: Timer | None = None

    @property
    def position(self) -> Position:
        return self.session.position if self.session is not None else Position()

    def compose(self) -> ComposeResult:
        yield Header(icon="∑")
        yield from lesson_panes()
        yield FooterLine()

    @property
    def pane(self) -> TensorPane:
        return self.drawing.pane

    @property
    def _quiz(self) -> QuizView:
        return self.drawing.quiz

    @cached_property
    def _timeline(self) -> Timeline:
        return self.query_one(Timeline)

    def tensor_pane(self) -> TensorPane | None:
        return self.drawing.keyed_pane(self.focused)

    def on_mount(self) -> None:
        self.title = "attention-tracer"
        self.drawing.source.border_title = "source"
        self._quiz.on_draft = self._keep_draft
        self.pane.loading = True
        self.call_after_refresh(self._load)

    def on_unmount(self) -> None:
        self._saver.close()  # quitting right after a move still saves where it went
        # The heap was frozen after loading, so the collector would never stop the plugins'
        # worker processes: stop them here, when the lesson leaves the screen.
        if self.session is not None:
            self.session.close()
        thaw_heap()  # what this screen held can be collected; the next screen freezes anew

    # Loading -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _load(self) -> LessonSession:
        session = self._read_lesson(self.spec, self._host)
        collect_before_freezing()  # here, off the UI thread; the screen then freezes the rest
        return session

    def _read_lesson(self, spec: str | Path, host: PluginHost | None) -> LessonSession:
        if host is None:
            host_of = getattr(self.app, "plugin_host", None)  # the app's one host
            host = host_of() if host_of is not None else None
        dark = self.app.current_theme.dark
        warm_app()
        return open_lesson(
            spec,
            lesson_dirs=self.lesson_dirs,
            plugin_dirs=self.plugin_dirs,
            host=host,
            highlight=lambda path: prepare_source(path, dark),
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        group = event.worker.group
        if group not in ("load", "reload"):
            super().on_worker_state_changed(event)
            return
        if group == "reload" and event.worker is not self._latest_reload:
            return  # an earlier save's reload finishing late: the latest one decides
        if event.state == WorkerState.SUCCESS:
            session = event.worker.result
            assert isinstance(session, LessonSession)
            self.pane.loading = False
            if group == "load":
                self._started(session)
            else:
                self._reloaded(session)
        elif event.state == WorkerState.ERROR:
            self.pane.loading = False
            error = event.worker.error or RuntimeError("unknown error")
            message = self.describe(error)
            if group == "load":
                self.set_exit_status(error)
                self.pane.show_error(message)
                self.drawing.prose("#caption", "")
                self.app.show_error("The lesson could not be opened", message)  # type: ignore[attr-defined]
            else:
                self._close_reload_error()
                self._reload_error = ErrorScreen(
                    "The edited lesson has problems (still showing the last good version)",
                    message,
                )
                self.app.push_screen(self._reload_error)

    def _started(self, session: LessonSession) -> None:
        freeze_heap()
        self.session = session
        self.app.variant_names = sorted(session.host.variants)  # type: ignore[attr-defined]
        if self.store is None:
            store_of = getattr(self.app, "progress_store", None)  # the app's one store
            self.store = store_of() if store_of is not None else ProgressStore()
        warning = session.attach(self.store, resume=self.resume)
        if warning:
            self.app.notify(warning, title="Progress", severity="warning", markup=False)
        self._fill_timeline(session)
        if self.watch_file:
            self.set_interval(WATCH_SECONDS, self._check_file)
        self.show(session.position)

    def _fill_timeline(self, session: LessonSession) -> None:
        self.title = visible(session.lesson.title, multiline=False)  # the file's text, made safe
        self._timeline.set_items((str(n), *entry) for n, entry in enumerate(session.contents()))

    # Reload on save -----------------------------------------------------------------

    def _check_file(self) -> None:
        session = self.session
        if session is None or any(w.group == "reload" and w.is_running for w in self.workers):
            return
        if session.changed():
            self._latest_reload = self._reload(session.path, session.host)

    @work(thread=True, exclusive=True, exit_on_error=False, group="reload")
    def _reload(self, path: Path, host: PluginHost) -> LessonSession:
        return self._read_lesson(path, host)

    def reload_now(self) -> None:
        """Re-read the lesson file (what saving it in an editor triggers)."""
        if self.session is not None:
            self.session.file_read()
            self._latest_reload = self._reload(self.session.path, self.session.host)

    def _close_reload_error(self) -> None:
        """A later save fixed the lesson (or broke it anew): the old message no longer applies."""
        modal, self._reload_error = self._reload_error, None
        if modal is not None and modal.is_current:
            modal.dismiss(None)

    def _reloaded(self, session: LessonSession) -> None:
        self._close_reload_error()
        old = self.session
        if old is not None:
            session.adopt(old)  # the learner, their answers and their place carry over
        self.session = session
        self.drawing.forget()
        self._fill_timeline(session)
        self.app.notify("Lesson reloaded", timeout=2)
        self.show(session.position)

    # Showing a step -------------------------------------------------------------------

    def show(self, position: Position) -> bool:
        """Move the session to ``position`` and draw it; False if there is no such step."""
        return self.session is not None and self._went(self.session.go(position))

    def _draw(self, session: LessonSession) -> None:
        """Draw the session's view of the step it is on, in one repaint."""
        position = session.position
        step = session.steps[position.step]
        with self.app.batch_update():  # one repaint for the whole change
            self.drawing.arrange(step, quiz_alone=session.quiz_alone())
            try:
                self.drawing.draw(step, session.view())
            except Exception as error:
                self._step_error(error)
            self._timeline.set_current(str(position.step), [str(n) for n in range(position.step)])
            self.fit_columns()
            self._focus_quiz(step.kind == "quiz")
            # The footer's keys follow the focus in this frame (Textual's after the next).
            self.query_one(FooterLine).sync()
        self._when_drawn()

    def fit_columns(self) -> None:
        """The code gets the room the step's tensors leave (show and loop steps, compare)."""
        if self.session is not None:
            kind = self.session.steps[self.position.step].kind
            self.drawing.fit(kind, self.give_left, narrow=self.has_class("-narrow"))

    def _step_error(self, error: BaseException) -> None:
        self.drawing.show_tensor_pane()
        self.pane.show_error(self.describe(error))
        self.app.notify(self.describe(error), title="Step failed", severity="error", markup=False)

    # Moving: the session moves; the screen runs what takes long off the UI thread ---------

    def _move(self, move: Move, then: Callable[[Move], bool]) -> bool:
        """A move's pending work in a worker (``then`` finishes it), else ``then(move)``."""
        if isinstance(move, Waiting):
            self.run_pending(move.pending, lambda after: self._move(after, then))
            return True
        return then(move)

    def step_next(self) -> bool:
        session = self.session
        return session is not None and self._move(session.next(wait=False), self._went_on)

    def _went_on(self, move: Move) -> bool:
        """Where → went: a step drawn, the variant's error (staying), or the lesson's end."""
        session = self.session
        if session is None:
            return False
        if isinstance(move, Failed):
            self._step_error(move.error)  # the variant failed inside the loop: stay
            return False
        if isinstance(move, AtEnd):
            self._finish()
            return False
        shown = self._went(move)
        if self.playing and session.quiz() is not None:
            # A quiz waits for its answer: auto-play never walks past a question.
            self.stop_autoplay()
            self.app.notify("Auto-play paused at a quiz", timeout=2)
        return shown

    def _went(self, move: Move) -> bool:
        """Draw where a move went (nothing if it stayed; a refusal said in a line)."""
        if isinstance(move, Refused):
            self.app.notify(move.reason, timeout=1.5)
        if not move.moved or self.session is None:
            return False
        self._draw(self.session)
        return True

    def step_previous(self) -> bool:
        session = self.session
        return session is not None and self._move(session.back(wait=False), self._went)

    def step_start(self) -> None:
        if self.session is not None:
            self._went(self.session.first())

    def step_end(self) -> None:
        if self.session is not None:
            self._went(self.session.last())

    def step_loop_end(self) -> None:
        if self.session is not None:
            self._move(self.session.loop_end(wait=False), self._went)

    def go_to_step(self, number: int) -> None:
        self.stop_autoplay()
        self.show(Position(number))

    def next_tensor(self) -> None:
        self.pane.next_tensor()

    def show_progress(self, message: str) -> None:
        self.pane.show_message(message)

    def job_failed(self, error: BaseException) -> None:
        self._step_error(error)

    def job_cancelled(self) -> None:
        self.show(self.position)

    def on_timeline_selected(self, event: Timeline.Selected) -> None:
        if not self.busy and event.key.isdigit():
            self.go_to_step(int(event.key))

    def _finish(self) -> None:
        """The end of the lesson: a summary (quiz score, what it covered) and the way on."""
        session = self.session
        if session is None:
            return
        self.stop_autoplay()
        self._say_warning(session.warning)
        if any(isinstance(screen, LessonEndScreen) for screen in self.app.screen_stack):
            return
        ending = session.ending()
        self.app.push_screen(
            LessonEndScreen(ending.title, ending.summary, ending.following_title),
            lambda choice: self._after_end(choice, ending.following),
        )

    def _after_end(self, choice: str | None, following: Path | None) -> None:
        if choice == "next" and following is not None:
            self.app.open_lesson(following)  # type: ignore[attr-defined]
        elif choice == "restart":
            self.step_start()

    # Quizzes: keys go to the quiz's box; the session grades -----------------------------------

    def _quiz_here(self) -> Quiz | None:
        """The step on screen, if it is a quiz (keys and pastes then go to its answer box)."""
        return self.session.quiz() if self.session is not None else None

    def action_choose(self, number: int) -> None:
        """A digit: picks a choice, or starts typing a number quiz's answer."""
        if self._quiz_here() is not None:
            self._quiz.choose(number)

    def action_answer(self) -> None:
        if self._quiz_here() is not None:
            self._quiz.focus_answer()

    def _focus_quiz(self, quiz: bool) -> None:
        """A quiz on screen gets the focus (its box, or a choice) with what was marked or
        typed before; leaving one, its focus goes (a hidden box must not take the keys)."""
        session = self.session
        if quiz and session is not None:
            if self._quiz.quiz is session.quiz():  # drawn (a failed step keeps the last quiz)
                self._quiz.resume(session.draft())
        elif self.focused is not None and self._quiz in self.focused.ancestors:
            self.set_focus(None)

    def _keep_draft(self, text: str) -> None:
        """The quiz's marks or typed text changed: the session keeps them as its draft."""
        if self.session is not None and self._quiz_here() is not None:
            self.session.keep_draft(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.TYPING_HIDES and getattr(self.focused, "takes_every_key", False):
            return False  # the box has the focus: these keys type into it
        return super().check_action(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """Typing meant for a quiz's answer box that reached the screen instead (see take_key)."""
        if self._quiz_here() is not None and self._quiz.take_key(event.key, event.character):
            event.stop()
            event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        """A paste while no box has the focus: a quiz's answer, into its box (else it is lost)."""
        if self._quiz_here() is not None and self._quiz.type_text(event.text):
            event.stop()

    def on_quiz_view_answered(self, event: QuizView.Answered) -> None:
        session = self.session
        if session is None or self._quiz_here() is None:
            return
        try:
            verdict = session.answer(event.response)
            view = session.view()
        except Exception as error:
            self._step_error(error)
            return
        if verdict.right is None:
            self._quiz.refuse(verdict.message)  # no answer at all: nothing is revealed
            return
        self._quiz.feedback(verdict.response, verdict.right, verdict.value)
        self._say_warning(session.warning)
        if view.tables:  # answered: the hidden cells of its tables show now
            self.drawing.show_quiz_tables(view)
        self._when_drawn()  # the steps either side, as they may show now the quiz is answered

    # Progress: the session saves, on the saver's thread; the screen picks the moment ------

    def _when_drawn(self) -> None:
        """Once the step is on screen: save the position off the UI thread (see
        :mod:`tracer.session.saver`; quiz answers are saved at once), and soon after compute
        the steps either side ahead and draw their code (on this thread): moving to one draws
        little anew."""
        self.call_after_refresh(self._saver.request)
        COLLECTOR.after_frame(self)  # the garbage collector runs again once this is on screen
        if self._preparing is not None:
            self._preparing.stop()
        if self.session is not None:  # not while the frame is written: its thread needs Python
            self._preparing = self.set_timer(PREPARE_AFTER, self.drawing.prepare_nearby)

    def _save_now(self) -> str | None:
        """The saver's work (on its thread, or on the way out): the position it reads now."""
        session = self.session
        return session.save() if session is not None else None

    def on_save_warning(self, message: SaveWarning) -> None:
        self._say_warning(message.warning)

    def _say_warning(self, warning: str | None) -> None:
        if warning:
            self.app.notify(warning, title="Progress", severity="warning", markup=False)

    # Palette -------------------------------------------------------------------------

    def palette_commands(self) -> list[PaletteCommand]:
        session = self.session
        if session is None:
            return []
        return lesson_commands(session.contents(), session.path, self.go_to_step, self.reload_now)
