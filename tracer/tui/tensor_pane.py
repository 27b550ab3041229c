"""The right-hand pane: every tensor of the step at once, and a line of detail under them.

A stage shows each tensor it recorded, stacked, each labelled with the axes
the variant named. A loop sub-step shows its own tensors the same way (any
rank) and, when its sub-steps declare a :class:`~tracer.equations.Dot`, the
loop's matrix filling in above them. Arithmetic is written out term by term
only from a declared equation, and only when the numbers on screen satisfy it:
two vectors side by side are not evidence that they were multiplied.
Errors and the "loading torch" wait are shown here too, never as a crash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.strip import Strip
from textual.widgets import Static

from tracer.render.labels import holds_stage, loop_matrix_axes
from tracer.render.text import shorten
from tracer.session.explore import LoopCanvas, cell_of
from tracer.tui import textual_hooks as hooks
from tracer.tui.backdrop import Backdrop
from tracer.tui.equation_text import equation_text
from tracer.tui.grid import CanvasGrid, Grid, Highlight, TensorGrid
from tracer.tui.kept import KeptBlank
from tracer.tui.steady import Label, ScrollColumn, SteadySize
from tracer.tui.tensor_view import TensorView
from tracer.tui.text_pane import TextPane
from tracer.variant import Stage, SubStep

SLOTS = 6
"""Tables composed up front; a step with more tensors gets more, mounted when first needed
(every tensor of a step is on screen: the stack scrolls, and ``t`` moves to each)."""
SMALL = 10
"""A table this many lines high (or less) gets exactly its height; larger ones share the rest."""


@dataclass(frozen=True)
class Shown:
    """One tensor on screen: its title and its grid."""

    title: str
    grid: Grid


def loop_axes(stage: Stage | None) -> tuple[str, ...] | None:
    """Axis names for a loop's matrix, from the stage the loop builds (if it has been seen).

    A stage focused on one query is one row of the (query, key) table the loop fills.
    """
    if stage is None or not stage.tensors:
        return None
    return loop_matrix_axes(stage.axes.get(next(iter(stage.tensors))))


class TensorPane(Vertical, SteadySize, KeptBlank, Backdrop):
    """Every tensor of the current step, or the error that stopped them."""

    DEFAULT_CSS = """
    TensorPane {
        border: round $primary 60%;
        border-title-color: $text;
        border-title-style: bold;
    }
    TensorPane > #tensor-stack {
        height: 1fr;
        min-height: 3;
    }
    TensorPane .tensor-title {
        height: 1;
        color: $text;
        text-style: bold;
        background: $panel;
        padding: 0 1;
    }
    TensorPane > #tensor-detail {
        height: auto;
        /* The written-out arithmetic before the tables: they scroll, it cannot. */
        max-height: 70%;
        padding: 0 1;
        background: $panel;
    }
    TensorPane > #tensor-message {
        display: none;
        height: 1fr;
        padding: 1 2;
    }
    TensorPane.-message > #tensor-message {
        display: block;
    }
    TensorPane.-message > #tensor-stack, TensorPane.-message > #tensor-detail {
        display: none;
    }
    TensorPane.-error > #tensor-message {
        color: $text-error;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tensor_names: list[str] = []
        self.shown: list[Shown] = []
        self.grid: Grid | None = None
        """The first tensor on screen (the loop's matrix, or the stage's first tensor)."""
        self.detail = Text()
        """The line of detail under the tables (a formula, a written-out equation)."""
        self.full_title = ""
        """The pane's title in full; the border shows as much as fits, cut between words."""
        self.full_subtitle = ""
        """What the border's subtitle says in full (the tables out of sight, what "?" means)."""
        self.marks_hidden = False
        """Whether a table on screen draws a cell as "?" (a lesson keeps a quiz's answer)."""
        self.drawn_ahead_for: object | None = None
        """What a lesson drew into this pane while it was hidden (a step's view), for that step
        to show it as drawn; forgotten as soon as anything else changes what it shows."""
        self._out_of_sight: list[str] = []
        """The tables out of sight when last measured."""
        # The tables and their titles, kept as well as mounted: finding them by query at
        # every step cost about a millisecond of each key press.
        self._titles = [_title(n) for n in range(SLOTS)]
        self._views = [
            TensorView(id=f"tensor-view-{n}" if n else "tensor-view") for n in range(SLOTS)
        ]
        # Made as a step of one table shows them: a first step would otherwise hide the
        # other ten (a style change and refresh each, about 1.5 ms of a first compare).
        for widget in (*self._titles, *self._views[1:]):
            widget.display = False
        self._stack = ScrollColumn(id="tensor-stack")

    def compose(self) -> ComposeResult:
        with self._stack:
            for title, view in zip(self._titles, self._views, strict=True):
                yield title
                yield view
        yield TextPane(id="tensor-detail")
        yield Label(id="tensor-message", markup=False)

    def on_mount(self) -> None:
        self.watch(self._stack, "scroll_y", lambda _value: self.say_hidden(), init=False)

    @property
    def view(self) -> TensorView:
        return self.query_one("#tensor-view", TensorView)

    @property
    def views(self) -> list[TensorView]:
        return list(self._views)

    # What to show ------------------------------------------------------------------

    def show_stage(
        self,
        stage: Stage,
        tokens: Sequence[str],
        query: int | None = None,
        focus: Highlight | None = None,
        tensor: str | None = None,
        formula: bool = True,
        title: str | None = None,
        hidden: Mapping[str, frozenset[tuple[int, int]]] | None = None,
    ) -> None:
        """Show every tensor of ``stage`` (``tensor`` first, if given), labelled by its axes.

        ``hidden``: per tensor, the cells drawn as "?" (a quiz's answer); it replaces
        ``focus.hidden`` for the tensors it names.
        """
        names = list(stage.tensors)
        if tensor in names:
            names.remove(tensor)
            names.insert(0, tensor)
        shown = []
        for number, name in enumerate(names):
            highlight = (
                (focus or Highlight())
                if number == 0
                else Highlight(hidden=focus.hidden if focus else frozenset())
            )
            if hidden is not None and name in hidden:
                highlight = replace(highlight, hidden=hidden[name])
            grid = TensorGrid(
                name, stage.tensors[name], tokens, query, highlight, axes=stage.axes.get(name)
            )
            shown.append(Shown(f"{name} · {grid.shape}", grid))
        if title is not None and len(shown) == 1:
            shown[0] = Shown(f"{title} · {shown[0].grid.shape}", shown[0].grid)
        detail = Text()
        if formula and stage.formula:
            detail.append(stage.formula, style="bold")
        self._show(shown, title or stage.name, detail)

    def show_substep(
        self,
        step: SubStep,
        canvas: LoopCanvas | None,
        tokens: Sequence[str],
        formula: bool = True,
        canvas_axes: Sequence[str] | None = None,
        query: int | None = None,
        *,
        hidden: Mapping[str, frozenset[tuple[int, int]]] | None = None,
        canvas_hidden: frozenset[tuple[int, int]] = frozenset(),
        formula_text: str | None = None,
        arithmetic: bool = True,
    ) -> None:
        """The sub-step's tensors, below the loop's matrix filled up to it (Dot loops only).

        What a lesson keeps off screen while a quiz is unanswered (the walk's
        :class:`~tracer.lessons.hiding.SubStepView`): ``hidden`` cells per tensor and
        ``canvas_hidden`` cells of the matrix read "?", ``formula_text`` replaces the
        sub-step's formula, and without ``arithmetic`` the equations are not written out.
        """
        shown: list[Shown] = []
        cell = cell_of(step)
        if canvas is not None and cell is not None:
            highlight = Highlight(
                rows=frozenset({cell[0]}),
                columns=frozenset({cell[1]}),
                current=cell,
                hidden=canvas_hidden,
            )
            matrix = CanvasGrid(step.stage, canvas, step.index, tokens, highlight, canvas_axes)
            # Named by what its cells hold: "so far" only where the sub-steps write the
            # stage's own tensor (naive-loop's score of scores); another number (lesson 14's
            # D in the grad_scores loop) is named as what each sub-step wrote.
            if holds_stage(step.stage, canvas.result):
                title = f"{step.stage} so far · {matrix.shape}"
            else:
                title = f"{canvas.result or step.stage}, each cell as its sub-step wrote it · {matrix.shape}"
            shown.append(Shown(title, matrix))
        for name, tensor in step.tensors.items():
            highlight = Highlight(hidden=hidden.get(name, frozenset()) if hidden else frozenset())
            grid = TensorGrid(name, tensor, tokens, query, highlight, axes=step.axes.get(name))
            shown.append(Shown(f"{name} · {grid.shape}", grid))
        detail = Text()
        written = step.formula if formula_text is None else formula_text
        if formula and written:
            detail.append(written + "\n", style="bold")
        equation = equation_text(step, numbers=arithmetic)
        if equation is not None:
            detail.append_text(equation)
        detail.rstrip()
        # The cell is in the narration and highlighted in the matrix; a title that changed
        # with every sub-step would repaint the whole pane, border and all, at each one.
        self._show(shown, f"{step.stage} loop", detail)

    def _slots(self, count: int) -> list[TensorView]:
        """At least ``count`` table views (titles before them), mounting more when needed."""
        if count > len(self._views):
            stack = self._stack
            for n in range(len(self._views), count):
                title, view = _title(n), TensorView(id=f"tensor-view-{n}")
                self._titles.append(title)
                self._views.append(view)
                stack.mount(title, view)
        return list(self._views)

    def _show(self, shown: list[Shown], title: str, detail: Text) -> None:
        self.drawn_ahead_for = None  # the drawing sets it again after a fill ahead
        self._message(None)
        self.shown = shown
        self.tensor_names = [item.grid.name for item in shown]
        self.grid = shown[0].grid if shown else None
        several = len(shown) > 1
        one = shown[0].title if len(shown) == 1 else title
        self._title(one)
        for n, view in enumerate(self._slots(len(shown))):
            label = self._titles[n]
            item = shown[n] if n < len(shown) else None
            visible = item is not None
            if view.display != visible:
                view.display = visible
            if label.display != (visible and several):
                label.display = visible and several
            if item is None:
                if view.grid is not None:
                    view.show(None)
                continue
            if label.content != item.title:
                label.update(
                    item.title, layout=False
                )  # one line high: a new title never resizes it
            height: str | int = "1fr"
            # Its header and rows: a table too wide for its numbers is drawn as an overview,
            # never scrolled sideways, so no line is held for a scrollbar (but with NO_COLOR,
            # where numbers are always drawn). Every table of a step then fits more often.
            natural = item.grid.rows + 1 + (1 if self.app.no_color else 0)
            if several and natural <= SMALL:
                height = natural
            if view.styles.height is None or str(view.styles.height) != str(height):
                view.styles.height = height
            least = min(3, natural) if several else None
            if least is None and view.styles.min_height is not None:
                view.styles.min_height = None  # Textual lays out again on every clear
            elif least is not None:
                view.styles.min_height = least  # a no-op when it is the same
            view.show(item.grid)
        self._detail(detail)
        marks = any(_draws_hidden(item.grid) for item in shown)
        if marks != self.marks_hidden:
            # Said in this frame, beside what was out of sight before: the tables out of
            # sight are known only after the layout (say_hidden), the meaning of "?" now.
            self.marks_hidden = marks
            self._say(self._out_of_sight)
        self.call_after_refresh(self.say_hidden)

    def hidden_tables(self) -> list[str]:
        """Names of the tables on screen that the stack does not show (scrolled out of sight)."""
        stack = self._stack
        if not stack.is_attached:  # a screen taken down removes the stack before the pane
            return []
        seen = stack.content_region
        if seen.height <= 0:
            return []
        out = []
        for item, view in zip(self.shown, self.views, strict=False):
            region = view.region
            if region.height <= 0 or region.y >= seen.bottom or region.bottom <= seen.y:
                out.append(item.grid.name)
        return out

    def say_hidden(self) -> None:
        """How many tables are out of sight, under the pane (``t`` or scrolling reaches them)."""
        if not self.is_attached:
            return
        self._say(self.hidden_tables())

    def _say(self, out_of_sight: list[str]) -> None:
        """The border's subtitle: the tables out of sight, then what "?" means if drawn."""
        self._out_of_sight = out_of_sight
        text = ""
        room = self._border_room()
        if out_of_sight:
            names = ", ".join(out_of_sight)
            count = len(out_of_sight)
            noun = "table" if count == 1 else "tables"
            text = f"{count} more {noun} out of sight: {names} (t or scroll)"
            if len(text) > room:  # shorter words, every name still said
                text = f"{count} more {noun} (t): {names}"
        if self.marks_hidden:
            # After what is out of sight, which matters more when both do not fit; in a
            # narrow pane the shorter words, whole.
            mark = next((m for m in (HIDDEN_MARK, *HIDDEN_MARK_SHORT) if len(m) <= room), "")
            both = f"{text} · {mark}" if text and mark else text or mark
            text = both if len(both) <= room or not text else text
        text = shorten(text, room)  # never cut mid-word
        self.full_subtitle = text
        if (self.border_subtitle or "") != text:  # None to "" would repaint the border
            self.border_subtitle = text

    def _border_room(self) -> int:
        """Columns a border title may take: the pane's width less its corners and a space
        each side (an unmeasured pane: no limit)."""
        width = self.size.width
        return width - 4 if width > 0 else 10_000

    if hooks.SIZE_UPDATED:

        def _size_updated(
            self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
        ) -> bool:
            # Inside the layout pass, before its frame is painted: a title cut to the new
            # width here is in that frame (cut on the Resize event, it cost a second frame).
            resized = super()._size_updated(size, virtual_size, container_size, layout)
            if resized and hooks.hooks_on() and hooks.BORDER_TITLE:
                title = shorten(self.full_title, self._border_room())
                if self.border_title != title:
                    # Stored as Textual's setter stores it, without its repaint request:
                    # the new size repaints the whole pane in this frame anyway.
                    self._border_title = self.render_str(title).expand_tabs(4).split()[0]
            return resized

    def on_resize(self) -> None:
        self._fit_title()
        self.call_after_refresh(self.say_hidden)

    def natural_height(self) -> int:
        """Lines this pane needs to show all its tables without scrolling (border included)."""
        several = len(self.shown) > 1
        tables = sum(item.grid.rows + 1 + (1 if several else 0) for item in self.shown)
        detail = self.query_one("#tensor-detail", TextPane)
        return tables + 2 + (detail.line_count if detail.display else 0)

    def natural_width(self) -> int | None:
        """Columns this pane needs to draw its tables, titles and detail whole (border included).

        Read from what is drawn: each table's numbers, label column and scrollbar,
        the titles, the longest line of detail. None when the pane wants all the
        room it can get (a message, an overview or token view the learner chose).
        """
        if self.has_class("-message") or not self.shown:
            return None
        widths = [cell_len(self.full_title) + 4]
        several = len(self.shown) > 1
        for item, view in zip(self.shown, self.views, strict=False):
            need = view.natural_width()
            if need is None:
                return None
            widths.append(need)
            if several:
                widths.append(cell_len(item.title) + 2)  # the title's padding
        widths.extend(cell_len(line) + 2 for line in self.detail.plain.splitlines())
        return max(widths) + 2

    def _title(self, title: str) -> None:
        self.full_title = title
        self._fit_title()

    def _fit_title(self) -> None:
        """The border shows the title whole, or cut between words: Textual would cut it
        mid-word."""
        title = shorten(self.full_title, self._border_room())
        if self.border_title != title:
            self.border_title = title

    def follow_focus(self) -> None:
        """Each table on show scrolls to its focus after the next frame, as a table shown then
        does (one drawn while hidden had no size to scroll in)."""
        for view in self.views:
            if view.display and view.grid is not None:
                view.follow_after_frame()

    def active_view(self) -> TensorView | None:
        """The tensor the keys act on: the focused one, else the first."""
        focused = self.screen.focused
        if isinstance(focused, TensorView) and focused in self.views and focused.grid is not None:
            return focused
        return self.view if self.view.grid is not None else None

    def next_tensor(self) -> None:
        """Move the keyboard focus to the next tensor (so ↑/↓, z and w act on it)."""
        self.drawn_ahead_for = None
        views = [view for view in self.views if view.display and view.grid is not None]
        if not views:
            return
        current = self.screen.focused
        index = views.index(current) if current in views else -1
        views[(index + 1) % len(views)].focus()

    def toggle_zoom(self) -> None:
        self.drawn_ahead_for = None
        view = self.active_view()
        if view is not None:
            view.toggle_zoom()

    def toggle_tokens(self) -> bool:
        self.drawn_ahead_for = None
        view = self.active_view()
        return view is not None and view.toggle_tokens()

    def show_error(self, message: str) -> None:
        """A plugin or lesson error, shown literally in place of the tensors."""
        self._message(message, error=True)

    def show_message(self, message: str) -> None:
        self._message(message)

    def _message(self, message: str | None, error: bool = False) -> None:
        if message is not None:
            self.drawn_ahead_for = None
        self.set_class(message is not None, "-message")
        self.set_class(error, "-error")
        if message is not None:
            self.query_one("#tensor-message", Static).update(Text(message))
            self._title("error" if error else "")

    def _detail(self, text: Text) -> None:
        self.detail = text
        detail = self.query_one("#tensor-detail", TextPane)
        if detail.display != bool(text.plain):
            detail.display = bool(text.plain)
        detail.show(text)


class TableTitle(Label):
    """A table's title line: whole, or cut between words where it is too wide (one line
    high, it would be cut mid-word).

    Its one row is drawn here, as one run of text in the title's style, and kept until the
    text, width or style changes: Textual's way (text to content, wrapped, styled) took
    about 0.4 ms a title, and a loop step shows three or four titles anew.
    """

    _line: tuple[tuple[object, ...], Strip] | None = None

    def render(self) -> Text:
        text = str(self.content)
        width = self.content_size.width
        return Text(shorten(text, width) if width > 0 else text)

    def render_line(self, y: int) -> Strip:
        if not hooks.hooks_on():
            return super().render_line(y)
        style = self.rich_style
        if y:
            return Strip.blank(self.content_size.width, style)
        key = (str(self.content), self.content_size.width, style)
        if self._line is None or self._line[0] != key:
            text = self.render().plain
            # The offset is what Textual's text carries for the mouse (selecting the title).
            run = Segment(text, style + Style.from_meta({"offset": (0, 0)}))
            self._line = (key, Strip([run], cell_len(text)))
        return self._line[1]


HIDDEN_MARK = "? = hidden until a quiz is answered"
HIDDEN_MARK_SHORT = ("? = hidden until answered", "? = hidden")
"""What :data:`HIDDEN_MARK` says where it does not fit, longest first."""
"""The border's note under tables that draw a cell as "?"."""


def _draws_hidden(grid: Grid) -> bool:
    """Whether ``grid`` draws one of its hidden cells now (a loop's matrix draws a cell only
    once the loop has written it)."""
    return any(
        0 <= row < grid.rows
        and 0 <= column < grid.columns
        and grid.row(row, column, column + 1)[0] is not None
        for row, column in grid.highlight.hidden
    )


def _title(n: int) -> Label:
    """The title line above the ``n``-th table (shown when a step has several)."""
    return TableTitle(id=f"tensor-title-{n}", classes="tensor-title", markup=False)
