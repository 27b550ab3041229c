"""Drawing a lesson step: the session's view, into the lesson screen's panes.

The lesson screen routes (keys to the session, moves to workers); this draws
what the session decided, with one drawer per kind of step, and keeps the
loop's position text one height for a whole loop. Nothing here computes a
step: tables, titles, formulas, hidden cells and the compare difference all
come in the :class:`~tracer.session.lesson.LessonView`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from tracer.lessons.hiding import Table
from tracer.lessons.model import Focus, LessonStep, Quiz
from tracer.lessons.views import StepView
from tracer.session.lesson import LessonSession, LessonView, LoopView, Position
from tracer.session.places import LoopWords, loop_words
from tracer.tui.grid import Highlight
from tracer.tui.quiz_view import QuizView
from tracer.tui.source_view import SourceView
from tracer.tui.steady import Column, Row, ScrollColumn, Switcher
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.tensor_view import TensorView
from tracer.tui.text_pane import ProsePane, TextPane
from tracer.tui.timeline import Timeline
from tracer.variant import Stage, SubStep

GiveLeft = Callable[..., int]
"""The screen's ``give_left(left, need, code, share=...)``: the left column's width, set."""
COMPARE_SHARE = 0.40
"""The left column's share on compare steps (the stylesheet's ``#left`` gives other steps 45%)."""
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


def lesson_panes() -> ComposeResult:
    """The lesson screen's panes, between its header and footer (what :class:`LessonDrawing`
    draws into): the timeline; narration and code on the left; the quiz and one of the
    tensors, a comparison, a narration or a checkpoint on the right."""
    yield Timeline(id="timeline")
    with Row(id="main"):
        with Column(id="left"):
            with ScrollColumn(id="lesson-text"):
                yield ProsePane(id="caption")
                yield TextPane(id="loop-position")
            yield SourceView(id="source")
            # Shown on compare steps only: set on the widget, not a class, which would
            # restyle every pane in the column on each change of step kind.
            right = SourceView(id="source-right")
            right.display = False
            yield right
        with Column(id="lesson-body"):
            yield QuizView(id="quiz")
            with Switcher(id="lesson-switch", initial="tensors"):
                yield TensorPane(id="tensors")
                # The second of two tensor panes that trade places: the step after (or before)
                # a show, loop or quiz is drawn into the one hidden while the learner reads.
                yield TensorPane(id="tensors-second")
                with Column(id="compare"):
                    yield TensorPane(id="compare-left")
                    yield TensorPane(id="compare-right")
                    yield TensorPane(id="compare-difference")
                with ScrollColumn(id="narration-body"):
                    yield ProsePane(id="narration-text")
                with ScrollColumn(id="checkpoint"):
                    yield ProsePane(id="checkpoint-text")


class LessonDrawing:
    """Draws a :class:`LessonView` into the panes of ``screen`` (the lesson screen)."""

    def __init__(self, screen: Screen[Any], session: Callable[[], LessonSession | None]) -> None:
        self.screen = screen
        self._session = session
        self._position_lines = (-1, 0, 0)
        """(loop step, width, lines): the most lines its position text has taken so far at
        that width (a resize measures anew)."""
        self._reserves: dict[tuple[int, int], int] = {}
        """(loop step, width) -> lines held for its position text (``position_reserve``)."""
        self._loop_axes: tuple[str, ...] | None = None
        """The axes of the matrix the loop on screen fills (its positions' tokens)."""
        self._loop: LoopView | None = None
        """The session's view of the loop drawn last (None: the step drawn is no loop)."""
        self._front = 0
        """Which of the two tensor panes (:attr:`tensor_panes`) show, loop and quiz steps
        draw into now; the other is drawn into ahead."""
        self._drawn_step = 0
        self._forward = True
        """Whether the learner came to the step drawn last from before it: the neighbour
        drawn ahead first, where both would be drawn into one pane, is the one that way."""

    def forget(self) -> None:
        """The lesson was reloaded: heights measured for its loops no longer apply, nor
        tables drawn ahead for its steps."""
        self._reserves.clear()
        for pane in (*self.tensor_panes, *self.compared):
            pane.drawn_ahead_for = None

    @property
    def session(self) -> LessonSession | None:
        return self._session()

    @property
    def position(self) -> Position:
        session = self.session
        return session.position if session is not None else Position()

    # The panes every step touches, found once: a query walks the screen's widgets.
    @cached_property
    def tensor_panes(self) -> tuple[TensorPane, TensorPane]:
        """The two tensor panes: one in front, one for the step drawn ahead (they trade)."""
        query = self.screen.query_one
        return query("#tensors", TensorPane), query("#tensors-second", TensorPane)

    @property
    def pane(self) -> TensorPane:
        """The tensor pane in front: the one show, loop and quiz steps are drawn into now."""
        return self.tensor_panes[self._front]

    @property
    def spare(self) -> TensorPane:
        """The tensor pane behind: hidden, for the step beside this one to be drawn into."""
        return self.tensor_panes[1 - self._front]

    def show_tensor_pane(self) -> None:
        """The lesson's body shows the tensor pane in front."""
        self.switcher.current = self.pane.id

    @cached_property
    def source(self) -> SourceView:
        return self.screen.query_one("#source", SourceView)

    @cached_property
    def switcher(self) -> ContentSwitcher:
        return self.screen.query_one("#lesson-switch", ContentSwitcher)

    @cached_property
    def quiz(self) -> QuizView:
        return self.screen.query_one(QuizView)

    @cached_property
    def left(self) -> Column:
        return self.screen.query_one("#left", Column)

    @cached_property
    def source_right(self) -> SourceView:
        return self.screen.query_one("#source-right", SourceView)

    @cached_property
    def compared(self) -> tuple[TensorPane, TensorPane, TensorPane]:
        """The compare step's panes: left, right and their difference."""
        query = self.screen.query_one
        return (
            query("#compare-left", TensorPane),
            query("#compare-right", TensorPane),
            query("#compare-difference", TensorPane),
        )

    @cached_property
    def text_box(self) -> ScrollColumn:
        return self.screen.query_one("#lesson-text", ScrollColumn)

    @cached_property
    def position_text(self) -> TextPane:
        return self.screen.query_one("#loop-position", TextPane)

    def arrange(self, step: LessonStep, *, quiz_alone: bool) -> None:
        """Show the left column only where it helps; a second source pane for compare.

        Styles are set on the widgets, not as a class on the screen: a screen
        class restyles every widget, which costs a visible fraction of a frame.
        """
        layout = LAYOUTS[step.kind]
        left = self.left
        wanted = layout.left and not quiz_alone  # a quiz without tables needs no left column
        if left.display != wanted:
            left.display = wanted
        right = self.source_right
        if right.display != layout.compare:
            right.display = layout.compare
        quiz = layout.quiz
        quiz_view = self.quiz
        if quiz:
            quiz_view.showing()
        if quiz_view.display != quiz:
            quiz_view.display = quiz
        position = self.position_text
        if position.display != layout.loop:
            position.display = layout.loop

    def fit(self, kind: str, give_left: GiveLeft, *, narrow: bool) -> None:
        """The code gets the room the step's tensors leave (show and loop steps, compare)."""
        layout = LAYOUTS[kind]
        left = self.left
        source = self.source
        # In a narrow terminal the question and its table need the room more than the code
        # behind the table (``.-narrow #source.-quiz`` in app.tcss). The class is set only
        # where it applies: a class change restyles the pane, about a millisecond of a key.
        narrow_quiz = layout.quiz and narrow
        if source.has_class("-quiz") != narrow_quiz:
            source.set_class(narrow_quiz, "-quiz")
        if layout.fit == "tensors":
            columns = give_left(left, self.pane.natural_width(), source.natural_width())
            if layout.loop:
                self.hold_position_height(columns)
        elif layout.fit == "compare":
            panes = [pane.natural_width() for pane in self.compared]
            right = self.source_right
            need = None if None in panes else max(w for w in panes if w is not None)
            give_left(left, need, max(source.natural_width(), right.natural_width()), COMPARE_SHARE)
        else:
            give_left(left, None, 0)

    def hold_position_height(self, columns: int) -> None:
        """Keep the loop's position text one height for the whole loop.

        A position one line taller or shorter than the last moves the source
        below it, and Textual lays the whole screen out again (a second frame).
        So the text gets, from the loop's first sub-step, the height of the
        tallest position the loop shows, measured at the width the column is
        given (just made visible, the pane itself still measures 0 columns),
        and never less than any position it has shown.
        """
        loop = self._loop
        if loop is None:
            return
        where = self.position_text
        text_box = self.text_box
        width = columns - text_box.styles.gutter.width - where.styles.gutter.width
        if text_box.show_vertical_scrollbar:  # a long caption scrolls: its bar takes columns
            width -= text_box.scrollbar_size_vertical
        tallest = max(where.line_count, self.position_reserve(loop, width))
        if self._position_lines[:2] == (self.position.step, width):  # a resize measures anew
            tallest = max(tallest, self._position_lines[2])
        self._position_lines = (self.position.step, width, tallest)
        if where.styles.min_height is None or where.styles.min_height.value != tallest:
            where.styles.min_height = tallest

    def position_reserve(self, loop: LoopView, width: int) -> int:
        """Lines to hold for the loop's position text at ``width``.

        For a loop of at most ``HELD_POSITIONS`` sub-steps, all at hand (the
        loading worker runs loops to count them), the tallest of their positions,
        cached per loop and width. Otherwise the position on screen, measured at
        the width it is given; the height then grows as taller ones come (word
        wrapping is not monotonic, so no bound is guessed from the longest names).
        Only sub-steps already computed are read: nothing runs here.
        """
        count = loop.count

        def lines(sub: SubStep, number: int) -> int:
            text = loop_position(sub, number + 1, count, loop.tokens, self._loop_axes)
            return len(text.wrap(self.screen.app.console, width))

        key = (self.position.step, width)
        cached = self._reserves.get(key)
        if cached is not None:
            return cached
        every = loop.at_hand(HELD_POSITIONS)
        if every is not None:
            tallest = max(lines(sub, n) for n, sub in enumerate(every))
            self._reserves[key] = tallest
            return tallest
        return lines(loop.sub, loop.number)

    def draw(self, step: LessonStep, view: LessonView) -> None:
        """Draw the session's view of the step with the drawer registered for its kind."""
        source = self.source
        body = self.switcher
        if not body.display:
            body.display = True
        if not LAYOUTS[step.kind].compare and str(source.border_title).startswith("source:"):
            source.border_title = "source"  # a compare step's side title no longer applies
        self._loop = None
        number = view.position.step
        if number != self._drawn_step:  # drawn again where it is (an answer): same way
            self._forward, self._drawn_step = number > self._drawn_step, number
        self.DRAWERS[view.kind](self, view)

    def _draw_narration(self, view: LessonView) -> None:
        self.switcher.current = "narration-body"
        self.prose("#narration-text", view.step.text)

    def _draw_checkpoint(self, view: LessonView) -> None:
        self.switcher.current = "checkpoint"
        self.prose("#checkpoint-text", view.step.text)

    def _draw_show(self, view: LessonView) -> None:
        if self._onto_tensors(view.step):
            self.pane.follow_focus()  # as a fill now would, once the frame has sized the tables
        else:
            self._fill_show(view.step, self.pane)
        self.prose("#caption", view.step.text)
        main = view.tables[0]
        stage = main.resolved.stage
        self.source.show_file(
            stage.source_file,
            stage.lines,
            produced=shown_tensor(main),
            files=stage.files,
        )

    def _fill_show(self, shown: StepView, pane: TensorPane) -> None:
        """A show step's tables, its focus highlighted."""
        tables = shown.tables
        self._show_tables(pane, tables, tables[0].focus, {t.name: t.hidden for t in tables})

    def _onto_tensors(self, drawing: object) -> bool:
        """Show the tensor pane a show, loop or quiz step is drawn in: the one ``drawing`` was
        drawn ahead into (True), the two trading places if it is the one behind; else the
        one in front, for the step to be drawn into now (False)."""
        ahead = self._drawn_ahead((self.pane,), drawing)
        if not ahead and self._drawn_ahead((self.spare,), drawing) and self._may_trade():
            self._front = 1 - self._front
            ahead = True
        self.show_tensor_pane()
        return ahead

    def _may_trade(self) -> bool:
        """Whether the pane behind may come to the front as drawn: nothing the learner did in
        the pane in front would carry over to the next step drawn there (a zoom, the token
        view, the keyboard focus in one of its tables)."""
        front = self.pane
        focused = self.screen.focused
        if focused is not None and front in focused.ancestors_with_self:
            return False
        return all(_as_drawn(view) for view in front.views)

    def _tensor_pane_ahead(self, claimed: set[TensorPane]) -> TensorPane | None:
        """The tensor pane a step beside this one may be drawn into now: the one in front
        where this step hides it, else the one behind (unless a zoom or the token view left
        there would show in what is drawn); none that the other neighbour has claimed."""
        on_screen = self.switcher.display and self.switcher.current == self.pane.id
        if not on_screen and self.pane not in claimed:
            return self.pane
        spare = self.spare
        if spare not in claimed and all(_as_drawn(view) for view in spare.views):
            return spare
        return None

    def _draw_loop(self, view: LessonView) -> None:
        loop = self._loop = view.loop
        assert loop is not None
        if not self._onto_tensors(LoopAhead(view.step, loop)):
            self._fill_loop(view.step, loop, self.pane)
        self.prose("#caption", view.step.text)
        self._loop_axes = loop.axes
        self.position_text.show(styled(loop.words))
        sub = loop.sub
        self.source.show_file(sub.source_file, sub.lines, files=sub.files)

    def _fill_loop(self, shown: StepView, loop: LoopView, pane: TensorPane) -> None:
        """A loop's sub-step: its tensors, below the matrix the loop fills."""
        said = loop.shown
        pane.show_substep(
            loop.sub,
            loop.canvas,
            loop.tokens,
            canvas_axes=loop.axes,
            query=getattr(shown.step, "query", None),
            # What the session keeps off screen while a quiz is unanswered.
            hidden=said.hidden if said is not None else None,
            canvas_hidden=said.canvas_hidden if said is not None else frozenset(),
            formula_text=said.formula if said is not None else None,
            arithmetic=said.arithmetic if said is not None else True,
        )

    def _draw_compare(self, view: LessonView) -> None:
        source = self.source
        self.switcher.current = "compare"
        self.prose("#caption", view.step.text)
        left, right = view.tables
        if not self._drawn_ahead(self.compared, view.step):
            self._fill_compare(view.step)
        for widget, table in (
            (source, left),
            (self.source_right, right),
        ):
            resolved = table.resolved
            name = table.label or resolved.name
            widget.border_title = f"source: {name} ({resolved.ref.variant})"
            widget.show_file(resolved.stage.source_file, resolved.stage.lines)

    def _fill_compare(self, shown: StepView) -> None:
        """The compare step's three tables: its two sides and their difference."""
        left, right = shown.tables
        left_pane, right_pane, diff_pane = self.compared
        for pane, table in ((left_pane, left), (right_pane, right)):
            resolved = table.resolved
            name = table.label or resolved.name
            stage = Stage(
                name=resolved.stage.name,
                title=table.title,  # as the walk concealed it
                tensors={name: resolved.tensor},
                axes=_derived_axes(table, name),
            )
            pane.show_stage(
                stage,
                resolved.tokens,
                resolved.query,
                title=f"{name} ({resolved.ref.variant})",
                hidden={name: table.hidden},  # an unanswered quiz's answer reads "?"
            )
        difference = shown.difference
        if difference is None:
            diff_pane.show_message(
                "The two tensors have different shapes, so there is no difference to show."
            )
        else:
            axes = _derived_axes(left, "right − left")
            diff_stage = Stage(
                "difference", "right − left", {"right − left": difference}, axes=axes
            )
            diff_pane.show_stage(
                diff_stage,
                left.resolved.tokens,
                left.resolved.query,
                hidden={"right − left": shown.difference_hidden},
            )
        # Small tables get the lines they need (a 1fr share could hide a one-row table).
        for pane in self.compared:
            natural = pane.natural_height()
            height: int | str = natural if natural <= COMPARE_SMALL else "1fr"
            if str(pane.styles.height) != str(height):
                pane.styles.height = height

    def _draw_quiz(self, view: LessonView) -> None:
        prompt = view.quiz
        assert prompt is not None and self.session is not None
        verdict = prompt.verdict
        previous = (verdict.response, verdict.right is True) if verdict is not None else None
        answer = verdict.value if verdict is not None else None
        self.quiz.ask(prompt.quiz, previous, answer, live=self._live_for(prompt.quiz))
        tables = view.step.quiz
        assert tables is not None
        self.quiz.set_class(not view.tables, "-alone")  # no table below: all the height
        if not view.tables:
            self.switcher.display = False
            self.prose("#caption", "")  # no stale caption from the step before
            return
        if self._onto_tensors(view.step):
            self.pane.follow_focus()  # as a fill now would, once the frame has sized the tables
        else:
            self.show_quiz_tables(view)
        self.prose("#caption", tables.caption)
        stage = view.tables[0].resolved.stage
        self.source.show_file(stage.source_file, stage.lines, files=stage.files)

    DRAWERS: ClassVar[dict[str, Callable[[LessonDrawing, LessonView], None]]] = {
        "narration": _draw_narration,
        "show": _draw_show,
        "loop": _draw_loop,
        "compare": _draw_compare,
        "quiz": _draw_quiz,
        "checkpoint": _draw_checkpoint,
    }
    """The widget code for each kind of step's view: the session decides what a step shows."""

    def prepare_nearby(self) -> None:
        """While the learner reads: the session computes the steps either side, the code
        panes draw ahead the lines those steps will show (:meth:`SourceView.prepare`), and a
        show's, a compare's or a quiz's tables are drawn into their hidden panes, so that
        moving to one draws little anew. Where both steps would be drawn into one pane, the
        step on the way the learner is going gets it. A step that fails is left to fail when
        shown. A hidden quiz's choices that lost the focus are restyled now, not when it shows."""
        session = self.session
        if session is None:
            return
        quiz = self.quiz
        if not quiz.display:
            quiz.showing()  # nothing is drawn: it is hidden
        session.prepare_nearby()
        here = session.position.step
        way = 1 if self._forward else -1
        claimed: set[TensorPane] = set()
        for number in (here + way, here - way):
            if not 0 <= number < len(session.steps):
                continue
            # Ahead of time only: a step that fails, or code that cannot be drawn, is met when
            # the step is shown, where its error is said.
            with contextlib.suppress(Exception):
                shown = session.step_view(number)
                self._draw_code_ahead(session, shown, number > here)
                loop = None
                if shown.kind == "loop":
                    loop = session.loop_view_ahead(number, from_before=number > here)
                self._draw_tables_ahead(shown, claimed=claimed, loop=loop)

    def _draw_tables_ahead(
        self,
        shown: StepView,
        *,
        claimed: set[TensorPane] | None = None,
        loop: LoopView | None = None,
    ) -> None:
        """A show step's tables, a compare's or a quiz's, or the sub-step ``loop`` a loop
        step opens on, drawn into panes that this step hides (the step's key then only shows
        them). ``claimed``: panes the other neighbour holds already (they are left to it);
        those drawn into here are added."""
        claimed = set() if claimed is None else claimed
        drawing: object = shown
        if shown.kind == "compare" and len(shown.tables) == 2:
            panes: tuple[TensorPane, ...] = self.compared
            if self.switcher.current == "compare" or not claimed.isdisjoint(panes):
                return
            fill: Callable[[], None] = functools.partial(self._fill_compare, shown)
        else:
            fill_into: Callable[[TensorPane], None]
            if loop is not None and shown.kind == "loop":
                drawing = LoopAhead(shown, loop)
                fill_into = functools.partial(self._fill_loop, shown, loop)
            elif shown.kind == "quiz" and shown.tables and shown.quiz is not None:
                fill_into = functools.partial(self._fill_quiz_tables, shown)
            elif shown.kind == "show" and shown.tables:
                fill_into = functools.partial(self._fill_show, shown)
            else:
                return
            held = [
                pane
                for pane in self.tensor_panes
                if same_drawing(pane.drawn_ahead_for, drawing) and pane not in claimed
            ]
            target = held[0] if held else self._tensor_pane_ahead(claimed)
            if target is None:
                return
            panes = (target,)
            fill = functools.partial(fill_into, target)
        claimed.update(panes)
        if all(same_drawing(pane.drawn_ahead_for, drawing) for pane in panes):
            return
        fill()  # should this fail half way, the step fills the panes anew when shown
        for pane in panes:
            pane.drawn_ahead_for = drawing

    @staticmethod
    def _drawn_ahead(panes: Sequence[TensorPane], drawing: object) -> bool:
        """Whether ``panes`` hold what was drawn ahead for ``drawing`` (a step's view, or a
        :class:`LoopAhead`); taken: a later visit draws them anew, as every visit did before."""
        ahead = all(same_drawing(pane.drawn_ahead_for, drawing) for pane in panes)
        for pane in panes:
            pane.drawn_ahead_for = None
        return ahead

    def _draw_code_ahead(self, session: LessonSession, view: StepView, forward: bool) -> None:
        # A screenful either side of the lines that ran: the pane may be taller on that step
        # than on this one (a compare halves it), or hidden (a compare's second pane).
        rows = self.screen.size.height
        if view.kind == "loop":
            code = session.loop_code(view.number, from_before=forward)
            if code is not None:
                self.source.prepare(*code, rows=rows)
            return
        if view.kind == "compare" and len(view.tables) == 2:
            shown = [(self.source, view.tables[0]), (self.source_right, view.tables[1])]
        elif view.kind in ("show", "quiz") and view.tables:
            shown = [(self.source, view.tables[0])]
        else:
            return
        for pane, table in shown:
            stage = table.resolved.stage
            made = shown_tensor(table) if view.kind == "show" else None  # as _draw_show marks
            pane.prepare(stage.source_file, stage.lines, produced=made, rows=rows)

    def _live_for(self, quiz: Quiz) -> Callable[[str], str]:
        session = self.session
        assert session is not None
        return lambda text: session.text(text, quiz)

    def show_quiz_tables(self, view: LessonView) -> None:
        """The quiz's tables as the session gives them: its answer's cells hidden until answered."""
        self._fill_quiz_tables(view.step, self.pane)

    def _fill_quiz_tables(self, shown: StepView, pane: TensorPane) -> None:
        tables = shown.quiz
        assert tables is not None
        hidden = {table.name: table.hidden for table in shown.tables}
        if tables.context is not None:
            # Titled by the tensor's name, as --plain and the exports title it: a stage's title
            # may state the answer ("192 with the cache", "the cache holds 4 numbers").
            names = ", ".join(table.name for table in shown.tables)
            focus = shown.tables[0].focus
            self._show_tables(pane, shown.tables, focus, hidden=hidden, title=names)
            return
        tensors, axes, hide = {}, {}, {}
        for table in shown.tables:
            name = table.name
            while name in tensors:
                name += "'"
            tensors[name] = table.resolved.tensor
            axes.update(_derived_axes(table, name))
            hide[name] = table.hidden
        main = shown.tables[0].resolved
        # By the tables' names, never the stage's title, which may state the answer.
        title = ", ".join(tensors)
        stage = Stage(name=main.stage.name, title=title, tensors=tensors, axes=axes)
        pane.show_stage(stage, main.tokens, main.query, formula=False, title=title, hidden=hide)

    def _show_tables(
        self,
        pane: TensorPane,
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
        if title is not None and not main.derived:
            shown_title = title
        elif main.derived:
            shown_title = main.title  # its name and what it was derived from
        else:
            # The tensor by name, then its stage: a stage holds several tensors, and its
            # title alone ("Route 1: …, renormalise") would say another one is shown.
            shown_title = f"{main.name} · {main.title}"
        stage = Stage(
            name=main.resolved.stage.name,
            title=shown_title,
            tensors=tensors,
            formula=main.formula,
            axes=axes,
        )
        pane.show_stage(
            stage,
            main.resolved.tokens,
            main.resolved.query,
            highlight,
            title=shown_title,
            hidden=hidden,
        )

    def keyed_pane(self, focused: Widget | None) -> TensorPane:
        """The pane the zoom and token keys act on: on a compare step, the focused one."""
        if self.switcher.current == "compare":
            for pane in self.screen.query("#compare TensorPane").results(TensorPane):
                if focused is not None and focused in pane.query("*").nodes:
                    return pane
            return self.screen.query_one("#compare-left", TensorPane)
        return self.pane

    def prose(self, selector: str, text: str) -> None:
        """Prose the session has already filled in, shown as written."""
        self.screen.query_one(selector, ProsePane).show(text)


@dataclass(frozen=True, eq=False)
class LoopAhead:
    """What a loop step's pane is drawn for: the step's view, at one of its sub-steps."""

    step: StepView
    loop: LoopView

    @property
    def place(self) -> tuple[object, ...]:
        # What the pane shows of the loop besides the step's view: the sub-step and what the
        # loop's known length and built stage let it say.
        loop = self.loop
        return (loop.number, loop.count, loop.axes, loop.sub.index, loop.sub.stage)


def _as_drawn(view: TensorView) -> bool:
    """Whether a table shows as drawing it shows it: not zoomed, no token view."""
    return view.zoomed is None and not view.token_view


def same_drawing(held: object, wanted: object) -> bool:
    """Whether a pane drawn for ``held`` shows what drawing ``wanted`` would."""
    if isinstance(held, LoopAhead) and isinstance(wanted, LoopAhead):
        return held.step is wanted.step and held.place == wanted.place
    return held is not None and held is wanted


def shown_tensor(table: Table) -> str | None:
    """The tensor a show step's table is of: the code pane marks the statement that made it."""
    return table.resolved.ref.tensor or next(iter(table.resolved.stage.tensors), None)


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


def loop_position(
    step: SubStep,
    number: int | None,
    count: int | None,
    tokens: Sequence[str],
    axes: Sequence[str] | None = None,
) -> Text:
    """The session's words for where a loop is (:func:`~tracer.session.places.loop_words`),
    styled: the place in bold, the tokens of a pair dimmed on a line of their own."""
    return styled(loop_words(step, number, count, tokens, axes))


def styled(words: LoopWords) -> Text:
    """A loop's place in bold, the tokens of a pair dimmed on a line of their own."""
    text = Text(words.head, style="bold")
    text.append(words.where)
    if words.names:
        text.append("\n" + words.names, style="dim")
    return text


def _derived_axes(table: Table, name: str) -> dict[str, tuple[str, ...]]:
    """Axis names of a table after the lesson's operations; none if unsure."""
    axes = table.resolved.axes
    return {name: axes} if axes is not None else {}


def warm_app() -> None:
    """The app's own warm-up, in the loading worker: the Markdown parser and the Python
    lexer loaded once (the session then highlights each source file the lesson shows)."""
    from rich.markdown import Markdown  # noqa: F401 - first import of the Markdown parser
    from rich.syntax import Syntax

    Syntax("x = 1", "python").highlight("x = 1")  # loads the Python lexer once
