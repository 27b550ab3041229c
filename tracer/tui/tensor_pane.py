"""The right-hand pane: tensor names, the heatmap, and a line of detail under it.

For a stage it shows each tensor the stage recorded (``t`` or a click picks
one). For a loop sub-step it shows the loop's matrix filling in, the cell
being computed, and the two vectors being dotted, written out term by term.
Errors and the "loading torch" wait are shown here too, never as a crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tracer.render.text import format_number
from tracer.tui.grid import CanvasGrid, Grid, Highlight, TensorGrid
from tracer.tui.stepper import LoopCanvas, cell_of
from tracer.tui.tensor_view import TensorView
from tracer.tui.text_pane import TextPane
from tracer.tui.timeline import Timeline
from tracer.variant import Stage, SubStep

VECTOR_LIMIT = 8


def vector_text(tensor: Any) -> str:
    values = tensor.detach().flatten().tolist()
    shown = ", ".join(format_number(v) for v in values[:VECTOR_LIMIT])
    more = f", … ({len(values)} values)" if len(values) > VECTOR_LIMIT else ""
    return f"[{shown}{more}]"


def substep_detail(step: SubStep, formula: bool = True) -> Text:
    """The sub-step's tensors, and a dot product spelled out when there is one."""
    text = Text()
    if formula and step.formula:
        text.append(step.formula, style="bold")
        text.append("\n")
    vectors = [(n, t) for n, t in step.tensors.items() if getattr(t, "ndim", None) == 1]
    scalars = [(n, t) for n, t in step.tensors.items() if getattr(t, "ndim", None) == 0]
    for name, tensor in vectors:
        text.append(f"{name} = ", style="bold")
        text.append(vector_text(tensor) + "\n")
    if len(vectors) >= 2 and scalars:
        (_, a), (_, b) = vectors[0], vectors[1]
        if a.shape == b.shape and a.numel() <= VECTOR_LIMIT:
            terms = " + ".join(
                f"{format_number(x)}×{format_number(y)}"
                for x, y in zip(a.tolist(), b.tolist(), strict=True)
            )
            text.append(f"{terms} = {format_number(float(scalars[0][1]))}\n")
    for name, tensor in scalars:
        text.append(f"{name} = ", style="bold")
        text.append(format_number(float(tensor)) + "  ")
    return text


class TensorPane(Vertical):
    """Heatmap of the current step's tensors, or the error that stopped them."""

    DEFAULT_CSS = """
    TensorPane {
        border: round $primary 60%;
        border-title-color: $text;
        border-title-style: bold;
    }
    TensorPane > #tensor-names {
        display: none;
    }
    TensorPane.-several > #tensor-names {
        display: block;
    }
    TensorPane > #tensor-detail {
        height: auto;
        max-height: 40%;
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
    TensorPane.-message > TensorView, TensorPane.-message > #tensor-detail {
        display: none;
    }
    TensorPane.-error > #tensor-message {
        color: $text-error;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tensor_names: list[str] = []
        self.selected: str | None = None
        self._stage: Stage | None = None
        self._tokens: Sequence[str] = ()
        self._query: int | None = None
        self._focus = Highlight()
        self.grid: Grid | None = None

    def compose(self) -> ComposeResult:
        yield Timeline(id="tensor-names")
        yield TensorView(id="tensor-view")
        yield TextPane(id="tensor-detail")
        yield Static(id="tensor-message", markup=False)

    @property
    def view(self) -> TensorView:
        return self.query_one("#tensor-view", TensorView)

    # What to show ------------------------------------------------------------------

    def show_stage(
        self,
        stage: Stage,
        tokens: Sequence[str],
        query: int | None = None,
        focus: Highlight | None = None,
        tensor: str | None = None,
        formula: bool = True,
    ) -> None:
        """Show one of ``stage``'s tensors (``tensor``, else the one shown before, else the first)."""
        self._message(None)
        names = list(stage.tensors)
        if names != self.tensor_names:
            self.tensor_names = names
            self.query_one("#tensor-names", Timeline).set_items((n, n) for n in names)
        self.set_class(len(names) > 1, "-several")
        self._stage, self._tokens, self._query = stage, tokens, query
        self._focus = focus or Highlight()
        if tensor in names:
            self.selected = tensor
        elif self.selected not in names:
            self.selected = names[0] if names else None
        self._draw_stage()
        detail = Text()
        if formula and stage.formula:
            detail.append(stage.formula, style="bold")
        self._detail(detail)

    def _draw_stage(self) -> None:
        stage = self._stage
        if stage is None or self.selected is None:
            self.grid = None
            self.view.show(None)
            self.border_title = stage.name if stage else ""
            return
        self.grid = TensorGrid(
            self.selected, stage.tensors[self.selected], self._tokens, self._query, self._focus
        )
        self.query_one("#tensor-names", Timeline).set_current(self.selected)
        self._title(f"{self.selected} · {self.grid.shape}")
        self.view.show(self.grid)

    def show_substep(
        self,
        step: SubStep,
        canvas: LoopCanvas | None,
        tokens: Sequence[str],
        formula: bool = True,
    ) -> None:
        """The loop's matrix filled up to this sub-step, with its cell and vectors highlighted."""
        self._message(None)
        self._stage = None
        self.set_class(False, "-several")
        self.tensor_names = []
        cell = cell_of(step)
        if canvas is not None and cell is not None:
            highlight = Highlight(
                rows=frozenset({cell[0]}), columns=frozenset({cell[1]}), current=cell
            )
            self.grid = CanvasGrid(step.stage, canvas, step.index, tokens, highlight)
            # A title that stays put while the loop runs: changing it repaints the whole pane.
            self._title(f"{step.stage} (filling) · {self.grid.shape}")
            self.view.show(self.grid)
        else:
            self.grid = None
            self.view.show(None)
            self._title(f"{step.stage} (loop)")
        self._detail(substep_detail(step, formula))

    def _title(self, title: str) -> None:
        if self.border_title != title:
            self.border_title = title

    def next_tensor(self) -> None:
        if self._stage is None or len(self.tensor_names) < 2:
            return
        index = self.tensor_names.index(self.selected) if self.selected in self.tensor_names else -1
        self.selected = self.tensor_names[(index + 1) % len(self.tensor_names)]
        self._draw_stage()

    def on_timeline_selected(self, event: Timeline.Selected) -> None:
        event.stop()
        if event.key in self.tensor_names:
            self.selected = event.key
            self._draw_stage()

    def show_error(self, message: str) -> None:
        """A plugin or lesson error, shown literally in place of the tensors."""
        self._message(message, error=True)

    def show_message(self, message: str) -> None:
        self._message(message)

    def _message(self, message: str | None, error: bool = False) -> None:
        self.set_class(message is not None, "-message")
        self.set_class(error, "-error")
        if message is not None:
            self.query_one("#tensor-message", Static).update(Text(message))
            self.border_title = "error" if error else ""

    def _detail(self, text: Text) -> None:
        detail = self.query_one("#tensor-detail", TextPane)
        if detail.display != bool(text.plain):
            detail.display = bool(text.plain)
        detail.show(text)
