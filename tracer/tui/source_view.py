"""The plugin's source file, with the lines that produced the current step highlighted.

Like a debugger: line numbers in a gutter, a marker and a tinted background
on the lines that ran since the previous step, scrolled into view. Long lines
wrap (never cut off: the end of ``masked_fill(mask, -torch.inf)`` matters).
The tracer's plumbing, which the course's notebooks never have (``yield
stage(...)``, ``run.focus(...)``, ``fork_rng``), is dimmed so the torch code
stands out, and the statement that assigned the tensor on screen is marked
with ◆ when the source says so plainly (an assignment to the name the yield
passes); otherwise nothing is marked. The file is syntax-highlighted once.
"""

from __future__ import annotations

import ast
import functools
import linecache
import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

from rich.cells import get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Region, Size
from textual.strip import Strip

from tracer.parsing import parse_python
from tracer.tui import textual_hooks as hooks
from tracer.tui.colours import theme_colours
from tracer.tui.kept import recall
from tracer.tui.steady import SteadyScroll, placement

PLUMBING_CALL = re.compile(r"\brun\.[A-Za-z_]+\b")
"""``run.focus``, ``run.query_indices``, ``run.options``: the tracer's accessors."""


def _source(path: str) -> str:
    code = "".join(linecache.getlines(path))
    if not code and Path(path).is_file():
        code = Path(path).read_text(encoding="utf-8", errors="replace")
    return code


def highlighted(path: str, dark: bool = True) -> tuple[Text, ...]:
    """A source file's lines, syntax-highlighted once (loading workers call this ahead)."""
    # One cache key however it is called: ``f(p)`` and ``f(p, True)`` are two keys to
    # lru_cache, and the loading workers' warm-up missed the pane's call.
    return _highlighted(path, dark)


def prepare_source(path: str, dark: bool) -> None:
    """What showing ``path`` needs, done ahead (a loading worker): its highlighted lines and map."""
    shown_lines(path, dark)


@functools.lru_cache(maxsize=32)
def shown_lines(path: str, dark: bool) -> tuple[Text, ...]:
    """The lines as the pane shows them: highlighted, the tracer's plumbing dimmed."""
    plumbing = source_map(path).plumbing
    lines = []
    for number, line in enumerate(highlighted(path, dark), start=1):
        text = line.copy()
        if number in plumbing:
            text.stylize("dim")
        else:
            for match in PLUMBING_CALL.finditer(text.plain):
                text.stylize("dim", match.start(), match.end())
        lines.append(text)
    return tuple(lines)


@functools.lru_cache(maxsize=32)
def _highlighted(path: str, dark: bool) -> tuple[Text, ...]:
    code = _source(path)
    if not code:
        return ()
    syntax = Syntax(code, "python", theme="ansi_dark" if dark else "ansi_light")
    lines = list(syntax.highlight(code).split("\n", allow_blank=True))
    if lines and not lines[-1].plain:
        lines.pop()
    return tuple(lines)


@dataclass(frozen=True)
class YieldStatement:
    first: int
    last: int
    keywords: dict[str, ast.expr]


@dataclass(frozen=True)
class SourceMap:
    """What the source says about itself: plumbing lines, yields and assignments."""

    plumbing: frozenset[int]
    yields: tuple[YieldStatement, ...]
    assignments: dict[int, tuple[int, frozenset[str]]]
    """First line of each assignment statement -> (last line, names it assigns)."""


@functools.lru_cache(maxsize=32)
def source_map(path: str) -> SourceMap:
    """Parse the plugin's file once; an unparsable file has no plumbing and no marks."""
    try:
        tree = parse_python(_source(path))
    except (SyntaxError, ValueError):
        return SourceMap(frozenset(), (), {})
    plumbing: set[int] = set()
    yields = []
    assignments: dict[int, tuple[int, frozenset[str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Yield, ast.YieldFrom)):
            last = node.end_lineno or node.lineno
            plumbing.update(range(node.lineno, last + 1))
            call = node.value.value
            keywords = {}
            if isinstance(call, ast.Call):
                keywords = {k.arg: k.value for k in call.keywords if k.arg}
            yields.append(YieldStatement(node.lineno, last, keywords))
        elif isinstance(node, ast.With) and any(
            "fork_rng" in ast.unparse(item.context_expr) for item in node.items
        ):
            plumbing.add(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = frozenset(_assigned(targets))
            if names:
                assignments[node.lineno] = (node.end_lineno or node.lineno, names)
    yields.sort(key=lambda y: y.first)
    return SourceMap(frozenset(plumbing), tuple(yields), assignments)


def _assigned(targets: Iterable[ast.expr]) -> Iterable[str]:
    """Names a statement writes: ``x = ...``, ``x[i] = ...``, ``x += ...``, ``a, b = ...``."""
    for target in targets:
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, (ast.Tuple, ast.List)):
            yield from _assigned(target.elts)


def producing_lines(path: str, lines: Iterable[int], tensor: str | None) -> frozenset[int]:
    """The lines of the statement that last assigned ``tensor`` before its yield, if plain.

    The yield that handed the step over is the first one after the lines that
    ran that passes ``tensor=``; that keyword's value must be a name (optionally inside
    ``run.focus(...)``), and that name's last assignment among the lines that
    ran is the statement marked. Anything less plain marks nothing.
    """
    ran = sorted(set(lines))
    if tensor is None or not ran:
        return frozenset()
    info = source_map(path)
    # A loop's sub-step yields come first; the stage's own yield is the one passing ``tensor``.
    after = next((y for y in info.yields if y.first > ran[-1] and tensor in y.keywords), None)
    if after is None:
        return frozenset()
    expression = after.keywords.get(tensor)
    if (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and ast.unparse(expression.func) == "run.focus"
        and len(expression.args) == 1
    ):
        expression = expression.args[0]
    if not isinstance(expression, ast.Name):
        return frozenset()
    name = expression.id
    for line in reversed(ran):
        found = info.assignments.get(line)
        if found is not None and name in found[1]:
            return frozenset(range(line, found[0] + 1))
    return frozenset()


class Row(NamedTuple):
    """One screen line: characters ``start:end`` of source line ``number`` (``first`` for its
    first piece). A tuple: a file is folded anew at each width the pane is given, and a
    tuple is made in a fraction of a frozen dataclass's time."""

    number: int
    line: Text
    """The whole source line, as :func:`shown_lines` gives it."""
    start: int
    end: int
    first: bool

    @property
    def text(self) -> Text:
        """This row's piece of the line."""
        if self.start == 0 and self.end >= len(self.line.plain):
            return self.line
        return self.line[self.start : self.end]


def one_cell_each(plain: str) -> bool:
    """Whether every character of ``plain`` takes one cell (then characters are cells)."""
    return plain.isascii() and plain.isprintable()


def row_starts(plain: str, width: int) -> list[int]:
    """Where each row of at most ``width`` cells starts in ``plain`` (character indices)."""
    if one_cell_each(plain):
        return list(range(0, len(plain), width)) or [0]
    starts, used = [0], 0
    for index, character in enumerate(plain):
        size = get_character_cell_size(character)
        if used + size > width and used > 0:  # a wide character starts the next row whole
            starts.append(index)
            used = 0
        used += size
    return starts


def fold(lines: Iterable[Text], width: int) -> list[Row]:
    """Each line cut into rows of at most ``width`` cells."""
    rows: list[Row] = []
    for number, line in enumerate(lines, start=1):
        plain = line.plain
        if len(plain) <= width and one_cell_each(plain):  # most code: one row, no cuts to find
            rows.append(Row(number, line, 0, len(plain), True))
            continue
        starts = row_starts(plain, width)
        ends = [*starts[1:], len(plain)]
        rows.extend(
            Row(number, line, start, end, n == 0)
            for n, (start, end) in enumerate(zip(starts, ends, strict=True))
        )
    return rows


def _gutter_width(count: int) -> int:
    """Columns of the gutter beside a file of ``count`` lines: a marker, the numbers, room."""
    return len(str(max(count, 1))) + 3


KEPT_FOLDS = 24
"""Foldings a source pane keeps as drawn, one per file and width: a lesson goes back and forth
between a few variants' files, and each kind of step gives the code its own width."""


LINE_STRIPS = 4096
"""Whole lines a source pane keeps drawn (rows are cut from them)."""


@dataclass
class _Fold:
    """A file folded at one width, and the rows drawn from it so far."""

    rows: list[Row]
    strips: dict[tuple[int, bool, bool, int], Strip]

    @classmethod
    def of(cls, lines: Iterable[Text], width: int) -> _Fold:
        """``lines`` folded at ``width``, nothing drawn yet."""
        return cls(fold(lines, width), {})


class SourceView(SteadyScroll, can_focus=True, inherit_bindings=False):
    """Read-only view of one source file with a set of highlighted lines."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Scroll up", show=False),
        Binding("down", "scroll_down", "Scroll down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    DEFAULT_CSS = """
    SourceView {
        height: 1fr;
        background: $surface;
        /* Lines wrap, so never a horizontal bar; the vertical one always, so the wrap
           width is known before the first layout and showing a step lays out once. */
        overflow-x: hidden;
        overflow-y: scroll;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.path: str | None = None
        self.lines: list[Text] = []
        self.marked: frozenset[int] = frozenset()
        self.produced: frozenset[int] = frozenset()
        """Lines of the statement that assigned the tensor on screen (◆)."""
        self.rows: list[Row] = []
        self._wrapped_for = -1
        self._longest = -1
        self._strips: dict[tuple[int, bool, bool, int], Strip] = {}
        self._folds: dict[tuple[str, int], _Fold] = {}
        """(file, width) -> its folding and drawn rows, the last :data:`KEPT_FOLDS` made."""
        self._line_strips: dict[tuple[str, int, bool, bool], Strip] = {}
        """(file, line, marks) -> the whole line drawn once in its colours; a row is a cut."""
        self._markings: dict[tuple[bool, bool], tuple[Style, Style, Style]] = {}
        """(marked, made) -> the styles of such a line (see :meth:`_marking`), this theme's."""
        self._pieces: dict[tuple[str, int, int, int, bool, bool], tuple[Strip, Style]] = {}
        """(file, line, cut, marks) -> the row drawn unpadded (see :meth:`_piece`)."""
        self._colours: tuple[Color, Color, Color] | None = None
        self._frame: tuple[int, int] | None = None
        """(width, scroll offset) while :meth:`render_lines` draws the rows."""
        self._reveal_due = False
        """Marked lines wait for the layout pass that gives the pane a size."""
        self._produced_name: str | None = None
        self._files: dict[str, tuple[int, ...]] | None = None
        """What the last ``show_file`` was given, to show it again in a new theme."""
        self._placed_at: tuple[Region, Region] | None = None
        self._placed_anew = False
        """The last layout pass put the pane somewhere new (its frame draws all of it)."""
        # overflow-y is "scroll": the bar is there from the first layout, not added by a
        # second one (a pane first shown on a compare step would take two frames).
        self.set_reactive(SourceView.show_vertical_scrollbar, True)

    REMEMBERED = 8
    """Drawings remembered by what they show: a step shown again draws no row anew."""

    def drawn_from(self) -> Hashable:
        # What the rows show besides the size and theme (in every kept drawing's key): the
        # file, the width it is folded to, the marks and the scroll. A width the next
        # drawing folds anew (``_measure``) does so the same way each time.
        return (self.path, self._wrapped_for, self.marked, self.produced, self.scroll_offset)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._reload())

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_drawn()

    def _forget_drawn(self) -> None:
        """Drop every drawn row (a new style draws them anew); the foldings hold."""
        self._colours = None
        self._strips.clear()  # the folding on screen's own rows
        for folding in self._folds.values():
            folding.strips.clear()
        self._line_strips.clear()
        self._pieces.clear()
        self._markings.clear()

    def _reload(self) -> None:
        # A new theme highlights the files anew: their lines, and so their foldings, go too.
        self._forget_drawn()
        self._folds.clear()
        if self.path is not None:
            path, self.path = self.path, None
            # As last shown: the ◆ on what made the tensor and the title's "also ran" too.
            marked, self.marked = self.marked, frozenset()
            self.show_file(path, marked, produced=self._produced_name, files=self._files)

    def show_file(
        self,
        path: str | None,
        marked: tuple[int, ...] | frozenset[int] = (),
        *,
        produced: str | None = None,
        files: dict[str, tuple[int, ...]] | None = None,
    ) -> None:
        """Show ``path`` with ``marked`` (1-based) highlighted and in view; ◆ on what made ``produced``."""
        self._produced_name, self._files = produced, files
        path_changed = path != self.path
        # Folded in the layout pass a new file asks for, at the width that pass gives: a step
        # that also re-shares the columns would otherwise fold the file twice.
        fold_in_layout = path_changed and hooks.SIZE_UPDATED and hooks.hooks_on()
        if path_changed:
            self.path = path
            self.lines = list(shown_lines(path, self.app.current_theme.dark)) if path else []
            self._longest = -1
            self._wrapped_for = -1
            if fold_in_layout:
                self.rows, self._strips = [], {}
                self.refresh(layout=True)
            else:
                self._wrap()
        name = Path(path).name if path else ""
        title = f"source · {name}" if name else "source"
        others = sorted(Path(f).name for f in (files or {}) if f != path)
        if others:  # helpers in other files ran too; this pane shows the file that yielded
            title += f" (also ran: {', '.join(others)})"
        current = str(self.border_title or "")
        if current != title and (current in ("", "source") or current.startswith("source · ")):
            self.border_title = title
        marked = frozenset(marked)
        made = producing_lines(path, marked, produced) if path else frozenset()
        if marked == self.marked and made == self.produced and self.lines:
            return
        changed = (marked ^ self.marked) | (made ^ self.produced)
        self.marked = marked
        self.produced = made
        top = self.scroll_offset.y
        if self.marked:
            # Scroll in the same frame: now when the pane is on screen, else in the layout pass
            # that puts it there (a later frame would cost a second repaint). A hidden pane
            # keeps its last size but has no place to measure its visible rows from.
            if self.size.height > 0 and self._on_screen() and not fold_in_layout:
                self._reveal()
            else:
                self._reveal_due = True
                if not (hooks.SIZE_UPDATED and hooks.hooks_on()):
                    # No layout hook to scroll in: after the frame that puts the pane there.
                    self.call_after_refresh(self._reveal_when_placed)
        # The strip cache stays: its key says whether a line is marked or made the tensor, so
        # only lines whose marking changed are built again (all of them cost ~5 ms a frame).
        # A pane that stays where it was on screen repaints only those rows (a loop's
        # sub-step moves the ▶ by a line or two); a new file, a scroll, or a pane the
        # layout pass will scroll repaints all of it.
        if path_changed or self._reveal_due or self.scroll_offset.y != top:
            self.refresh()
        else:
            for index, row in enumerate(self.rows):
                if row.number in changed:
                    self.refresh_line(index)

    def natural_width(self) -> int:
        """Columns that show every line of the file unwrapped (gutter, scrollbar and border included).

        0 while the pane is hidden (a short terminal drops it): it needs no room then.
        """
        if not self.display:
            return 0
        if self._longest < 0:
            self._longest = max((line.cell_len for line in self.lines), default=0)
        chrome = self.styles.gutter.width + self.styles.scrollbar_size_vertical
        return self._gutter() + self._longest + chrome

    def _text_width(self) -> int:
        return max(self.scrollable_content_region.width - self._gutter(), 10)

    if hooks.SIZE_UPDATED:

        def _size_updated(
            self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
        ) -> bool:
            # Fold the lines for a new width in the layout pass that gives it, before the
            # scrollbar is sized from them: folding while painting changed the virtual size
            # after the layout, and Textual then laid the screen out again (a second frame).
            # Without this private hook, on_resize and render_line fold, a frame later.
            if not hooks.hooks_on():
                return super()._size_updated(size, virtual_size, container_size, layout)
            chrome = self.styles.gutter.width + self.styles.scrollbar_size_vertical
            if size.width > chrome:
                self._wrap(max(size.width - chrome - self._gutter(), 10), in_layout=True)
            placed = placement(self)
            where = (placed.region, placed.clip) if placed is not None else None
            self._placed_anew, self._placed_at = where != self._placed_at, where
            resized = size != self.size
            changed = super()._size_updated(size, virtual_size, container_size, layout)
            if (resized or self._reveal_due) and size.height > 0:
                # A new size may hide the marked lines: scroll to them in this pass, which
                # paints the resized pane anyway (on_resize's check then finds them in view).
                self._reveal_due = False
                self._reveal(in_layout=True)
            return changed

    def _wrap(self, width: int | None = None, *, in_layout: bool = False) -> None:
        """Fold every line to the pane's width; continuation pieces get a ↪ gutter.

        ``in_layout``: called while Textual lays the screen out, which sizes the
        scrollbar from the new virtual size itself (no further layout is asked for).
        """
        width = self._text_width() if width is None else width
        if width == self._wrapped_for:
            return
        self._wrapped_for = width
        make = functools.partial(_Fold.of, self.lines, width)
        folding = recall(self._folds, (self.path, width), make, KEPT_FOLDS) if self.path else make()
        self.rows, self._strips = folding.rows, folding.strips
        folded = Size(self._gutter() + width, len(self.rows))
        if in_layout:
            self.set_reactive(SourceView.virtual_size, folded)
        else:
            self.virtual_size = folded

    def on_resize(self) -> None:
        self._wrap()
        # A new height (a resized terminal, a narrow layout) may hide the marked lines.
        if self.marked:
            self.call_after_refresh(self._reveal)

    def _reveal(self, *, in_layout: bool = False) -> None:
        """Scroll the marked lines into view (centred) unless they already are.

        ``in_layout``: called while Textual lays the screen out, whose frame draws
        this pane: the offset is set without asking for another repaint.
        """
        if not self.marked:
            return
        if not in_layout:
            self._wrap()
        first_row = next((n for n, r in enumerate(self.rows) if r.number == min(self.marked)), 0)
        last_row = max(
            (n for n, r in enumerate(self.rows) if r.number == max(self.marked)), default=first_row
        )
        top = self.scroll_offset.y
        visible = self._visible_rows()
        if top <= first_row and last_row < top + visible:
            return  # already in view: scrolling would only cost a repaint
        # Centred in the rows actually on screen (a parent may clip the pane's last rows).
        span = min(last_row - first_row + 1, visible)
        y = max(first_row - (visible - span) // 2, 0)
        if in_layout:
            y = min(y, self.max_scroll_y)
            self.set_reactive(SourceView.scroll_y, float(y))
            self.set_reactive(SourceView.scroll_target_y, float(y))
            self.vertical_scrollbar.position = y
            # Rows drawn at the old offset must not be reused. Where this layout placed the
            # pane anew, its frame draws the whole pane: marking the rows dirty (Textual's
            # private hook, which empties its row cache and the kept rows) is enough; a
            # refresh would ask for a second frame. Otherwise ask for the repaint.
            if self._placed_anew and hooks.SET_DIRTY:
                self._set_dirty()
            else:
                self.refresh()
            return
        self.scroll_to(y=y, animate=False, immediate=True)

    def _reveal_when_placed(self) -> None:
        """The marked lines into view once a frame has placed the pane (no layout hook)."""
        if self._reveal_due and self.size.height > 0 and self._on_screen():
            self._reveal_due = False
            self._reveal()

    def _on_screen(self) -> bool:
        """Whether the last layout put some of the pane on screen (not a hidden column's)."""
        placed = placement(self)
        return placed is not None and placed.clip.intersection(placed.region).height > 0

    def _visible_rows(self) -> int:
        """Rows of text on screen: fewer than the pane's height when its parent clips it."""
        region = self.scrollable_content_region
        placed = placement(self)
        if placed is None:
            return max(region.height, 1)
        return max(placed.clip.intersection(region).height, 1)

    def _gutter(self) -> int:
        return _gutter_width(len(self.lines))

    def render_lines(self, crop: Region) -> list[Strip]:
        # The pane's width and offset, found once for all its rows (each lookup asks the
        # compositor where the pane is: about a tenth of drawing a row).
        self._frame = self._measure()
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _measure(self) -> tuple[int, int]:
        if self._text_width() != self._wrapped_for:
            # A new width (the columns were re-shared for this step): fold the lines for it
            # in this frame, rather than paint the old folding now and repaint it after.
            self._wrap()
        return self.size.width, self.scroll_offset.y

    def render_line(self, y: int) -> Strip:
        width, scroll_y = self._frame if self._frame is not None else self._measure()
        if self._colours is None:
            self._colours = theme_colours(self)
        base = self._colours[0]
        index = scroll_y + y
        if index >= len(self.rows):
            return Strip.blank(width, Style(bgcolor=base.rich_color))
        row = self.rows[index]
        marked = row.number in self.marked
        made = row.number in self.produced
        key = (index, marked, made, width)
        cached = self._strips.get(key)
        if cached is not None:
            return cached
        body, padding = self._piece(self.path or "", len(self.lines), row, marked, made)
        strip = self._strips[key] = body.adjust_cell_length(width, padding)
        return strip

    def prepare(
        self,
        path: str | None,
        marked: Iterable[int] = (),
        *,
        produced: str | None = None,
        rows: int | None = None,
    ) -> None:
        """Draw ahead (while the learner reads) the rows a step showing ``path`` with ``marked``
        will most likely show: a screenful of lines either side of the first marked one, each
        whole, as a pane wide enough for it shows it. A step that then shows them draws only
        what it cuts otherwise; nothing on screen changes now. ``rows``: the most rows the pane
        may have on that step (its height now by default; a hidden pane has none)."""
        rows = rows or self.size.height
        if not path or rows <= 0:
            return
        if self._colours is None:
            self._colours = theme_colours(self)
        lines = shown_lines(path, self.app.current_theme.dark)
        marked = frozenset(marked)
        made = producing_lines(path, marked, produced)
        centre = min(marked, default=1)
        for number in range(max(centre - rows, 1), centre + rows):
            if number > len(lines):
                break
            line = lines[number - 1]
            row = Row(number, line, 0, len(line.plain), True)
            self._piece(path, len(lines), row, number in marked, number in made)

    def _piece(
        self, path: str, count: int, row: Row, marked: bool, made: bool
    ) -> tuple[Strip, Style]:
        """A row of ``path`` (``count`` lines long) drawn with its gutter, unpadded, and the
        style that pads it to the pane's width.

        Kept across widths: a line that fits both is the same piece at both, so a step that
        gives the code a new width draws only the lines it cuts differently and the padding;
        and those are cut from the line drawn whole in its colours, kept too.
        """
        key = (path, row.number, row.start, row.end, marked, made)
        piece = self._pieces.get(key)
        if piece is not None:
            return piece
        gutter_style, tint, padding = self._marking(marked, made)
        marker = "◆" if made else "▶" if marked else " "
        digits = _gutter_width(count) - 3
        shown = str(row.number) if row.first else "↪"
        gutter = f"{marker}{shown:>{digits}}  "
        body = self._body(path, row, marked, made, tint)
        if len(self._pieces) > LINE_STRIPS:
            self._pieces.clear()
        piece = self._pieces[key] = (
            Strip.join([Strip([Segment(gutter, gutter_style)]), body]),
            padding,
        )
        return piece

    def _marking(self, marked: bool, made: bool) -> tuple[Style, Style, Style]:
        """The gutter's style, the tint under the code, and the padding's style of a line
        marked (it ran) or made (it made the tensor shown), or neither: made once a theme."""
        looks = self._markings.get((marked, made))
        if looks is None:
            assert self._colours is not None  # render_line and prepare found them
            base, text_colour, accent = self._colours
            background = base.blend(accent, 0.4 if made else 0.22) if marked or made else base
            # Text colour, not the accent, on tinted lines: an orange accent on a light tint
            # vanishes.
            gutter_colour = text_colour if marked or made else base.blend(text_colour, 0.8)
            gutter_style = Style(
                color=gutter_colour.rich_color,
                bgcolor=background.rich_color,
                bold=marked or made,
            )
            # The theme's text colour under the syntax colours: code the lexer leaves
            # uncoloured must not fall back to a default meant for another background.
            tint = Style(color=text_colour.rich_color, bgcolor=background.rich_color)
            looks = (gutter_style, tint, Style(bgcolor=background.rich_color))
            self._markings[(marked, made)] = looks
        return looks

    def _body(self, path: str, row: Row, marked: bool, made: bool, tint: Style) -> Strip:
        """The row's piece of its line in the line's colours: a cut of the whole line, drawn
        and tinted once for each way it is marked."""
        line = row.line
        if not one_cell_each(line.plain):  # a cut by cells would not be a cut by characters
            return Strip(list(row.text.render(self.app.console))).apply_style(tint)
        key = (path, row.number, marked, made)
        whole = self._line_strips.get(key)
        if whole is None:
            if len(self._line_strips) > LINE_STRIPS:
                self._line_strips.clear()
            drawn = Strip(list(line.render(self.app.console)))
            whole = self._line_strips[key] = drawn.apply_style(tint)
        if row.start == 0 and row.end >= len(line.plain):
            return whole
        return whole.crop(row.start, row.end)
