"""``attn lesson NAME``: a lesson, step by step, with live tensors, loops, comparisons and quizzes.

The lesson's position is a step number and, inside a ``loop`` step, a
sub-step number. Loops are stepped with a :class:`~tracer.tracing.stepper.Stepper`
of their own, so stepping back inside a long loop works without keeping it all.
Progress (position, quiz answers) is saved after every move. The lesson file
is watched: saving it in an editor reloads it in place, keeping the position
if that step still exists; a lesson with problems shows them in a modal and
keeps the last good version on screen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import ContentSwitcher, Footer, Header
from textual.worker import Worker, WorkerState

from tracer.lessons.model import Focus, LessonStep, Quiz
from tracer.lessons.walk import COUNT_STEPS as COUNT_STEPS
from tracer.lessons.walk import STEP_ICONS as STEP_ICONS
from tracer.lessons.walk import LoopState, Table, quiz_has_tables, step_label
from tracer.sanitize import visible
from tracer.session.lesson import LessonSession, LessonView, Position, file_time, open_lesson
from tracer.session.lesson import reopen as reopen
from tracer.tui.commands import PaletteCommand
from tracer.tui.grid import Highlight
from tracer.tui.loop_count import loop_noun
from tracer.tui.modals import ErrorScreen, LessonEndScreen
from tracer.tui.progress import LessonProgress, ProgressStore
from tracer.tui.quiz_view import QuizView
from tracer.tui.source_view import SourceView, prepare_source
from tracer.tui.steady import Column, Row, ScrollColumn, Switcher
from tracer.tui.step_screen import StepScreen, collect_before_freezing, freeze_heap, thaw_heap
from tracer.tui.tensor_pane import TensorPane, loop_axes
from tracer.tui.text_pane import ProsePane, TextPane
from tracer.tui.timeline import Timeline
from tracer.variant import Stage, SubStep

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost

__all__ = ["LessonScreen", "Position", "focus_highlight", "loop_position", "step_label"]

WATCH_SECONDS = 0.5
COMPARE_SHARE = 0.40
"""The left column's share on compare steps (``#left.-compare`` in app.tcss)."""
COMPARE_SMALL = 12
"""A compared table this many lines high (or less) gets exactly its height."""
HELD_POSITIONS = 256
"""Loops up to this long hold their tallest position's height from the first sub-step."""


@dataclass(frozen=True)
class Layout:
    """The panes a kind of step uses."""

    left: bool = True
    """The left column (prose above the source); a quiz without tables drops it too."""
    compare: bool = False
    """Two source panes and the three compare tables."""
    quiz: bool = False
    """The question box above the tables."""
    loop: bool = False
    """The loop's position text ("pair 8 of 36")."""
    fit: str | None = None
    """``tensors`` or ``compare``: the tables whose width sets the left column's."""


LAYOUTS: dict[str, Layout] = {
    "narration": Layout(left=False),
    "checkpoint": Layout(left=False),
    "show": Layout(fit="tensors"),
    "loop": Layout(loop=True, fit="tensors"),
    "compare": Layout(compare=True, fit="compare"),
    "quiz": Layout(quiz=True),
}
"""Each step kind's panes (the registry :meth:`LessonScreen._arrange` reads)."""


def focus_highlight(focus: Focus | None, rows: int) -> Highlight:
    """The lesson's focus as rows, columns or a cell; a one-row (single query) tensor keeps row 0."""
    if focus is None:
        return Highlight()

    def row(index: int | None) -> int | None:
        if index is None:
            return None
        return 0 if rows == 1 else index

    r, c = row(focus.row), focus.column
    if focus.kind == "cell" and r is not None and c is not None:
        return Highlight(cells=frozenset({(r, c)}), rows=frozenset({r}), columns=frozenset({c}))
    return Highlight(
        rows=frozenset({r}) if r is not None and focus.kind in ("row", "token") else frozenset(),
        columns=frozenset({c})
        if c is not None and focus.kind in ("column", "token")
        else frozenset(),
    )


class LessonScreen(StepScreen):
    """Narration, source, tensors and quizzes for one lesson."""

    # Nothing focused at first: panes come and go between steps, and focus moving off a
    # hidden pane would rebuild the footer on every step. Tab focuses a pane to scroll it.
    AUTO_FOCUS = ""

    HELP = (
        "Step through the lesson with → and ←. Loop steps have sub-steps (pair 3 of 36): e "
        "jumps to the end of the loop. Answer quizzes in place (digits for choices, Enter for "
        "numbers); auto-play stops at them. Your place and answers are saved; editing the "
        "lesson file reloads it. z: overview or numbers; w: a query's weight to each key."
    )

    BINDINGS: ClassVar[list[BindingType]] = [
        *[
            Binding(
                str(n),
                f"choose({n})",
                "Quiz: pick a choice, or start typing a number",
                show=False,
                id=f"attn.digit_{n}",
            )
            for n in range(10)
        ],
        # Not in the footer: rebuilding the footer whenever a quiz comes and goes costs frames;
        # the quiz itself says which keys answer it.
        Binding("i", "answer", "Answer", id="attn.answer", show=False),
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
        self._position_lines = (-1, 0, 0)
        """(loop step, width, lines): the most lines its position text has taken so far at
        that width (a resize measures anew)."""
        self._reserves: dict[tuple[int, int], int] = {}
        """(loop step, width) -> lines held for its position text (``_position_reserve``)."""
        self._save_pending = False
        """A move's position is to be saved once its step is on screen (``_save_soon``)."""

    @property
    def position(self) -> Position:
        return self.session.position if self.session is not None else Position()

    @property
    def progress(self) -> LessonProgress:
        return self.session.progress if self.session is not None else LessonProgress()

    @property
    def loops(self) -> dict[int, LoopState]:
        return self.session.loops if self.session is not None else {}

    def compose(self) -> ComposeResult:
        yield Header(icon="∑")
        yield Timeline(id="timeline")
        with Row(id="main"):
            with Column(id="left"):
                with ScrollColumn(id="lesson-text"):
                    yield ProsePane(id="caption")
                    yield TextPane(id="loop-position")
                yield SourceView(id="source")
                yield SourceView(id="source-right", classes="-hidden")
            with Column(id="lesson-body"):
                yield QuizView(id="quiz")
                with Switcher(id="lesson-switch", initial="tensors"):
                    yield TensorPane(id="tensors")
                    with Column(id="compare"):
                        yield TensorPane(id="compare-left")
                        yield TensorPane(id="compare-right")
                        yield TensorPane(id="compare-difference")
                    with ScrollColumn(id="narration-body"):
                        yield ProsePane(id="narration-text")
                    with ScrollColumn(id="checkpoint"):
                        yield ProsePane(id="checkpoint-text")
        yield Footer()

    # The panes every step touches, found once: a query walks the screen's widgets, and a
    # step made about twenty of them (half a millisecond of each key press).
    @cached_property
    def pane(self) -> TensorPane:
        return self.query_one("#tensors", TensorPane)

    @cached_property
    def _source(self) -> SourceView:
        return self.query_one("#source", SourceView)

    @cached_property
    def _switcher(self) -> ContentSwitcher:
        return self.query_one("#lesson-switch", ContentSwitcher)

    @cached_property
    def _quiz(self) -> QuizView:
        return self.query_one(QuizView)

    @cached_property
    def _timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @cached_property
    def _position(self) -> TextPane:
        return self.query_one("#loop-position", TextPane)

    @cached_property
    def _left(self) -> Column:
        return self.query_one("#left", Column)

    def tensor_pane(self) -> TensorPane | None:
        switcher = self._switcher
        if switcher.current == "compare":
            focused = self.focused
            for pane in self.query("#compare TensorPane").results(TensorPane):
                if focused is not None and focused in pane.query("*").nodes:
                    return pane
            return self.query_one("#compare-left", TensorPane)
        return self.pane

    def on_mount(self) -> None:
        self.title = "attention-tracer"
        self._source.border_title = "source"
        self.pane.loading = True
        self.call_after_refresh(self._load)

    def on_unmount(self) -> None:
        self._save_if_pending()  # quitting right after a move still saves where it went
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
                self._prose("#caption", "")
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
        self._fill_timeline()
        if self.watch_file:
            self.set_interval(WATCH_SECONDS, self._check_file)
        self.show(session.position)

    def _fill_timeline(self) -> None:
        assert self.session is not None
        lesson = self.session.lesson
        self.title = visible(lesson.title, multiline=False)  # the file's text, made safe to show
        self._timeline.set_items(
            (str(n), *step_label(n + 1, step)) for n, step in enumerate(lesson.steps)
        )

    # Reload on save -----------------------------------------------------------------

    def _check_file(self) -> None:
        session = self.session
        if session is None or any(w.group == "reload" and w.is_running for w in self.workers):
            return
        if session.changed():
            self._reload(session.path, session.host)

    @work(thread=True, exclusive=True, exit_on_error=False, group="reload")
    def _reload(self, path: Path, host: PluginHost) -> LessonSession:
        return self._read_lesson(path, host)

    def reload_now(self) -> None:
        """Re-read the lesson file (what saving it in an editor triggers)."""
        if self.session is not None:
            self.session.mtime = file_time(self.session.path)
            self._reload(self.session.path, self.session.host)

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
        self._reserves.clear()
        self._fill_timeline()
        self.app.notify("Lesson reloaded", timeout=2)
        self.show(session.position)

    # Showing a step -------------------------------------------------------------------

    def show(self, position: Position) -> bool:
        """Move the session to ``position`` and draw it; False if there is no such step."""
        session = self.session
        if session is None or not session.go(position):
            return False
        position = session.position
        step = session.steps[position.step]
        with self.app.batch_update():  # one repaint for the whole change
            self._arrange(step)
            try:
                self._draw(step, session.view())
            except Exception as error:
                self._step_error(error)
            self._timeline.set_current(str(position.step), [str(n) for n in range(position.step)])
            self.fit_columns()
        self._save_soon()
        return True

    def _arrange(self, step: LessonStep) -> None:
        """Show the left column only where it helps; a second source pane for compare.

        Styles are set on the widgets, not as a class on the screen: a screen
        class restyles every widget, which costs a visible fraction of a frame.
        """
        layout = LAYOUTS[step.kind]
        left = self._left
        wanted = layout.left and not (
            layout.quiz
            and self.session is not None
            and not quiz_has_tables(self.session.lesson, self.position.step)
        )
        if left.display != wanted:
            left.display = wanted
        compare = layout.compare
        if left.has_class("-compare") != compare:
            left.set_class(compare, "-compare")
            self.query_one("#source-right").set_class(not compare, "-hidden")
        quiz = layout.quiz
        quiz_view = self._quiz
        if quiz_view.display != quiz:
            quiz_view.display = quiz
        position = self._position
        if position.display != layout.loop:
            position.display = layout.loop

    def fit_columns(self) -> None:
        """The code gets the room the step's tensors leave (show and loop steps, compare)."""
        steps = self._steps()
        if not steps:
            return
        layout = LAYOUTS[steps[self.position.step].kind]
        left = self._left
        source = self._source
        # In a narrow terminal the question and its table need the room more than the code
        # behind the table (``.-narrow #source.-quiz`` in app.tcss). The class is set only
        # where it applies: a class change restyles the pane, about a millisecond of a key.
        narrow_quiz = layout.quiz and self.has_class("-narrow")
        if source.has_class("-quiz") != narrow_quiz:
            source.set_class(narrow_quiz, "-quiz")
        if layout.fit == "tensors":
            columns = self.give_left(left, self.pane.natural_width(), source.natural_width())
            if layout.loop:
                self._hold_position_height(columns)
        elif layout.fit == "compare":
            panes = [
                p.natural_width() for p in self.query("#compare TensorPane").results(TensorPane)
            ]
            right = self.query_one("#source-right", SourceView)
            need = None if None in panes else max(w for w in panes if w is not None)
            self.give_left(
                left, need, max(source.natural_width(), right.natural_width()), COMPARE_SHARE
            )
        else:
            self.give_left(left, None, 0)

    def _hold_position_height(self, columns: int) -> None:
        """Keep the loop's position text one height for the whole loop.

        A position one line taller or shorter than the last moves the source
        below it, and Textual lays the whole screen out again (a second frame).
        So the text gets, from the loop's first sub-step, the height of the
        tallest position the loop shows, measured at the width the column is
        given (just made visible, the pane itself still measures 0 columns),
        and never less than any position it has shown.
        """
        state = self.loops.get(self.position.step)
        if state is None:
            return
        where = self._position
        text_box = self.query_one("#lesson-text")
        width = columns - text_box.styles.gutter.width - where.styles.gutter.width
        if text_box.show_vertical_scrollbar:  # a long caption scrolls: its bar takes columns
            width -= text_box.scrollbar_size_vertical
        tallest = max(where.line_count, self._position_reserve(state, width))
        if self._position_lines[:2] == (self.position.step, width):  # a resize measures anew
            tallest = max(tallest, self._position_lines[2])
        self._position_lines = (self.position.step, width, tallest)
        if where.styles.min_height is None or where.styles.min_height.value != tallest:
            where.styles.min_height = tallest

    def _position_reserve(self, state: LoopState, width: int) -> int:
        """Lines to hold for the loop's position text at ``width``.

        For a loop of at most ``HELD_POSITIONS`` sub-steps, all at hand (the
        loading worker runs loops to count them), the tallest of their positions,
        cached per loop and width. Otherwise the position on screen, measured at
        the width it is given; the height then grows as taller ones come (word
        wrapping is not monotonic, so no bound is guessed from the longest names).
        Only sub-steps already computed are read: nothing runs here.
        """
        stepper, count = state.stepper, state.count_known()

        def lines(sub: object, number: int) -> int:
            if not isinstance(sub, SubStep):
                return 0
            text = loop_position(sub, number, count, stepper.tokens)
            return len(text.wrap(self.app.console, width))

        key = (self.position.step, width)
        cached = self._reserves.get(key)
        if cached is not None:
            return cached
        every = range(state.first, state.last + 1) if state.last is not None else range(0)
        if 0 < len(every) <= HELD_POSITIONS and all(stepper.known(i) for i in every):
            tallest = max(lines(stepper.get(i), n) for n, i in enumerate(every))
            self._reserves[key] = tallest
            return tallest
        index = state.first + self.position.sub
        return lines(stepper.get(index), self.position.sub) if stepper.known(index) else 0

    def _step_error(self, error: BaseException) -> None:
        self._switcher.current = "tensors"
        self.pane.show_error(self.describe(error))
        self.app.notify(self.describe(error), title="Step failed", severity="error", markup=False)

    def _draw(self, step: LessonStep, view: LessonView) -> None:
        """Draw the session's view of the step with the drawer registered for its kind."""
        source = self._source
        body = self._switcher
        if not body.display:
            body.display = True
        if not LAYOUTS[step.kind].compare and str(source.border_title).startswith("source:"):
            source.border_title = "source"  # a compare step's side title no longer applies
        self.DRAWERS[view.kind](self, view)

    def _draw_narration(self, view: LessonView) -> None:
        self._switcher.current = "narration-body"
        self._prose("#narration-text", view.step.text)

    def _draw_checkpoint(self, view: LessonView) -> None:
        self._switcher.current = "checkpoint"
        self._prose("#checkpoint-text", view.step.text)

    def _draw_show(self, view: LessonView) -> None:
        self._switcher.current = "tensors"
        self._prose("#caption", view.step.text)
        main = view.tables[0]
        self._show_tables(view.tables, main.focus)
        stage = main.resolved.stage
        self._source.show_file(
            stage.source_file,
            stage.lines,
            produced=main.resolved.ref.tensor or next(iter(stage.tensors), None),
            files=stage.files,
        )

    def _draw_loop(self, view: LessonView) -> None:
        self._switcher.current = "tensors"
        self._prose("#caption", view.step.text)
        loop = view.loop
        assert loop is not None
        sub, stepper = loop.sub, loop.state.stepper
        self.pane.show_substep(
            sub,
            stepper.canvases.get(sub.stage),
            loop.tokens,
            canvas_axes=loop_axes(loop.stage),
            query=getattr(view.step.step, "query", None),
        )
        self._position.show(loop_position(sub, loop.number, loop.count, loop.tokens))
        self._source.show_file(sub.source_file, sub.lines, files=sub.files)

    def _draw_compare(self, view: LessonView) -> None:
        source = self._source
        self._switcher.current = "compare"
        self._prose("#caption", view.step.text)
        left, right = view.tables
        for pane_id, table in (("#compare-left", left), ("#compare-right", right)):
            resolved = table.resolved
            name = resolved.ref.label or resolved.name
            stage = Stage(
                name=resolved.stage.name,
                title=resolved.stage.title,
                tensors={name: resolved.tensor},
                axes=_derived_axes(table, name),
            )
            self.query_one(pane_id, TensorPane).show_stage(
                stage, resolved.tokens, resolved.query, title=f"{name} ({resolved.ref.variant})"
            )
        diff_pane = self.query_one("#compare-difference", TensorPane)
        difference = view.step.difference
        if difference is None:
            diff_pane.show_message(
                "The two tensors have different shapes, so there is no difference to show."
            )
        else:
            axes = _derived_axes(left, "right − left")
            diff_stage = Stage(
                "difference", "right − left", {"right − left": difference}, axes=axes
            )
            diff_pane.show_stage(diff_stage, left.resolved.tokens, left.resolved.query)
        # Small tables get the lines they need (a 1fr share could hide a one-row table).
        for pane in self.query("#compare TensorPane").results(TensorPane):
            natural = pane.natural_height()
            height: int | str = natural if natural <= COMPARE_SMALL else "1fr"
            if str(pane.styles.height) != str(height):
                pane.styles.height = height
        for widget, table in ((source, left), (self.query_one("#source-right", SourceView), right)):
            resolved = table.resolved
            name = resolved.ref.label or resolved.name
            widget.border_title = f"source: {name} ({resolved.ref.variant})"
            widget.show_file(resolved.stage.source_file, resolved.stage.lines)

    def _draw_quiz(self, view: LessonView) -> None:
        prompt = view.quiz
        assert prompt is not None and self.session is not None
        verdict = prompt.verdict
        previous = (verdict.response, verdict.right is True) if verdict is not None else None
        answer = self.session.runner.answer_text(prompt.quiz) if verdict is not None else None
        self._quiz.ask(prompt.quiz, previous, answer, live=self._live_for(prompt.quiz))
        tables = view.step.quiz
        assert tables is not None
        self._quiz.set_class(not view.tables, "-alone")  # no table below: all the height
        if not view.tables:
            self._switcher.display = False
            self._prose("#caption", "")  # no stale caption from the step before
            return
        self._switcher.current = "tensors"
        self._prose("#caption", tables.caption)
        self._show_quiz_tables(view)
        stage = view.tables[0].resolved.stage
        self._source.show_file(stage.source_file, stage.lines, files=stage.files)

    DRAWERS: ClassVar[dict[str, Callable[[LessonScreen, LessonView], None]]] = {
        "narration": _draw_narration,
        "show": _draw_show,
        "loop": _draw_loop,
        "compare": _draw_compare,
        "quiz": _draw_quiz,
        "checkpoint": _draw_checkpoint,
    }
    """The widget code for each kind of step's view: the session decides what a step shows."""

    def _live_for(self, quiz: Quiz) -> Callable[[str], str]:
        session = self.session
        assert session is not None
        return lambda text: session.text(text, quiz)

    def _show_quiz_tables(self, view: LessonView) -> None:
        """The quiz's tables as the session gives them: its answer's cells hidden until answered."""
        tables = view.step.quiz
        assert tables is not None
        hidden = {table.name: table.hidden for table in view.tables}
        if tables.context is not None:
            # Titled by the tensor's name, as --plain and the exports title it: a stage's title
            # may state the answer ("192 with the cache", "the cache holds 4 numbers").
            names = ", ".join(table.name for table in view.tables)
            self._show_tables(view.tables, view.tables[0].focus, hidden=hidden, title=names)
            return
        tensors, axes, hide = {}, {}, {}
        for table in view.tables:
            name = table.name
            while name in tensors:
                name += "'"
            tensors[name] = table.resolved.tensor
            axes.update(_derived_axes(table, name))
            hide[name] = table.hidden
        main = view.tables[0].resolved
        # By the tables' names, never the stage's title, which may state the answer.
        title = ", ".join(tensors)
        stage = Stage(name=main.stage.name, title=title, tensors=tensors, axes=axes)
        self.pane.show_stage(
            stage, main.tokens, main.query, formula=False, title=title, hidden=hide
        )

    def _show_tables(
        self,
        tables: tuple[Table, ...],
        focus: Focus | None,
        hidden: Mapping[str, frozenset[tuple[int, int]]] | None = None,
        title: str | None = None,
    ) -> None:
        """A show step's tables (the one it names, or all of its stage's), titled as the
        session decided; ``title`` in place of the stage's (a quiz showing them again)."""
        main = tables[0]
        tensors = {}
        axes = {}
        for table in tables:
            tensors[table.name] = table.resolved.tensor
            axes.update(_derived_axes(table, table.name))
        tensor = main.resolved.tensor
        rows = tensor.shape[0] if tensor.dim() == 2 else 1
        highlight = focus_highlight(focus, rows)
        shown_title = main.title if main.derived or title is None else title
        stage = Stage(
            name=main.resolved.stage.name,
            title=shown_title,
            tensors=tensors,
            formula=main.formula,
            axes=axes,
        )
        self.pane.show_stage(
            stage,
            main.resolved.tokens,
            main.resolved.query,
            highlight,
            title=shown_title,
            hidden=hidden,
        )

    def _prose(self, selector: str, text: str) -> None:
        """Prose the session has already filled in, shown as written."""
        self.query_one(selector, ProsePane).show(text)

    # Moving: the session moves; the screen runs what takes long off the UI thread ---------

    def _steps(self) -> tuple[LessonStep, ...]:
        return self.session.lesson.steps if self.session is not None else ()

    def step_next(self) -> bool:
        session = self.session
        if session is None:
            return False
        pending = session.pending()
        if pending is not None:
            # Even one sub-step runs off the UI thread: a variant that sleeps or never
            # returns must leave q, Esc and ctrl+c working.
            self._compute(pending, self.step_next)
            return True
        moved = session.next()
        if moved == "failed" and session.loop_error is not None:
            self._step_error(session.loop_error)  # the variant failed inside the loop: stay
            return False
        if moved == "end":
            self._finish()
            return False
        shown = self.show(session.position)
        if self.playing and session.quiz() is not None:
            # A quiz waits for its answer: auto-play never walks past a question.
            self.stop_autoplay()
            self.app.notify("Auto-play paused at a quiz", timeout=2)
        return shown

    def _compute(self, pending: tuple[LoopState, int], then: Callable[[], object]) -> None:
        """Compute a loop's sub-step in a worker, then ``then``."""
        state, index = pending

        def job(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> None:
            with contextlib.suppress(IndexError):
                state.stepper.get(index, cancelled=cancelled, progress=progress)

        def done(_result: object) -> None:
            then()

        self.run_long("Running the loop", job, done)

    def step_previous(self) -> bool:
        session = self.session
        back = session.before() if session is not None else None
        if session is None or back is None:
            return False
        pending = session.uncomputed(back)
        if pending is not None and back.step == session.position.step:
            self._compute(pending, lambda: self.show(back))
            return True
        return self.show(back)

    def step_start(self) -> None:
        self.show(Position())

    def step_end(self) -> None:
        steps = self._steps()
        if steps:
            self.show(Position(len(steps) - 1))

    def step_loop_end(self) -> None:
        session = self.session
        position = self.position
        if session is None:
            return
        if session.steps[position.step].kind != "loop":
            self.app.notify("This step is not a loop", timeout=1.5)
            return
        state = session.loops.get(position.step)
        if state is None:
            return

        def job(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int | None:
            return session.find_loop_end(state, cancelled, progress)

        def then(last: int | None) -> None:
            if last is not None:
                self.show(Position(position.step, last))

        self.run_long("Running to the end of the loop", job, then)

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
        following = session.next_lesson()
        self.app.push_screen(
            LessonEndScreen(
                session.lesson.title, session.summary(), following[1] if following else None
            ),
            self._after_end,
        )

    def _after_end(self, choice: str | None) -> None:
        session = self.session
        if choice == "next" and session is not None:
            following = session.next_lesson()
            if following is not None:
                self.app.open_lesson(following[0])  # type: ignore[attr-defined]
        elif choice == "restart":
            self.show(Position())

    # Quizzes: keys go to the quiz's box; the session grades -----------------------------------

    def _quiz_here(self) -> Quiz | None:
        """The step on screen, if it is a quiz (keys and pastes then go to its answer box)."""
        return self.session.quiz() if self.session is not None else None

    def action_choose(self, number: int) -> None:
        """A digit: picks a choice, or starts typing a number quiz's answer."""
        if self._quiz_here() is not None:
            self._quiz.choose(number)

    def action_answer(self) -> None:
        self._quiz.focus_answer()

    def on_key(self, event: events.Key) -> None:
        """Typing meant for a quiz's answer box that reached the screen instead (see take_key)."""
        quiz = self._quiz_here() is not None
        if quiz and self._quiz.take_key(event.key, event.character):
            event.stop()
            event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        """A paste while no box has the focus: a quiz's answer, into its box (else it is lost)."""
        quiz = self._quiz_here() is not None
        if quiz and self._quiz.type_text(event.text):
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
        quiz = self._quiz_here()
        assert quiz is not None
        self._quiz.feedback(verdict.response, verdict.right, session.runner.answer_text(quiz))
        self._say_warning(session.warning)
        if view.tables:  # answered: the hidden cells of its tables show now
            self._show_quiz_tables(view)

    # Progress: the session saves; the screen picks the moment -------------------------------

    def _save_soon(self) -> None:
        """Save the position once the step is on screen.

        Saving writes the progress file and waits for the disk (``fsync``), which
        took from a few to tens of milliseconds here: done before the frame, every
        key press waited for it. Quiz answers are still saved at once.
        """
        if not self._save_pending:
            self._save_pending = True
            self.call_after_refresh(self._save_if_pending)

    def _save_if_pending(self) -> None:
        if self._save_pending:
            self._save()

    def _save(self) -> None:
        self._save_pending = False
        if self.session is not None:
            self._say_warning(self.session.save())

    def _say_warning(self, warning: str | None) -> None:
        if warning:
            self.app.notify(warning, title="Progress", severity="warning", markup=False)

    # Palette -------------------------------------------------------------------------

    def palette_commands(self) -> list[PaletteCommand]:
        commands = []
        for number, step in enumerate(self._steps()):
            label, tip = step_label(number + 1, step)
            commands.append(
                PaletteCommand(
                    f"Go to step {label}",
                    tip,
                    lambda number=number: self.go_to_step(number),  # type: ignore[misc]
                )
            )
        if self.session is not None:
            commands.append(
                PaletteCommand("Reload the lesson file", str(self.session.path), self.reload_now)
            )
        return commands


def warm_app() -> None:
    """The app's own warm-up, in the loading worker: the Markdown parser and the Python
    lexer loaded once (the session then highlights each source file the lesson shows)."""
    from rich.markdown import Markdown  # noqa: F401 - first import of the Markdown parser
    from rich.syntax import Syntax

    Syntax("x = 1", "python").highlight("x = 1")  # loads the Python lexer once


def loop_position(step: SubStep, sub: int, count: int | None, tokens: Sequence[str]) -> Text:
    """Where a loop is: ``pair 8 of 36``, and which tokens, numbered as here and as in the course.

    The tracer numbers tokens from 0 (``x[1]``); the course's notebooks write
    x_1, x_2, ... from 1, so "journey" is x_2 there. Both are said where it matters.
    """
    kind = loop_noun(step)
    text = Text(f"{kind} {sub + 1:,} of {'?' if count is None else f'{count:,}'}", style="bold")
    position = ", ".join(str(p) for p in step.position)
    text.append(f" · position ({position}), counted from 0")
    named = [
        f"{tokens[p]} = x[{p}] here, x_{p + 1} in the course"
        for p in dict.fromkeys(step.position)
        if 0 <= p < len(tokens)
    ]
    if len(step.position) == 2 and named:
        text.append("\n" + "; ".join(named), style="dim")
    return text


def _derived_axes(table: Table, name: str) -> dict[str, tuple[str, ...]]:
    """Axis names of a table after the lesson's operations; none if unsure."""
    axes = table.resolved.axes
    return {name: axes} if axes is not None else {}
