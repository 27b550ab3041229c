"""``attn explore VARIANT``: step through every stage and loop sub-step of one variant.

The screen paints at once; a thread worker then imports torch, loads the
plugins and computes the first step, while the tensor pane shows a loading
indicator. The :class:`~tracer.session.explore.ExploreSession` holds the position and
makes the moves (stepping back on a trace that only runs forwards); this screen draws its
view, runs a move's pending work in a worker, and forwards the keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import Header
from textual.worker import Worker, WorkerState

from tracer.sanitize import visible
from tracer.session.explore import ExploreSession, ExploreView
from tracer.session.moves import AtEnd, Failed, Move, Moved, Refused, Waiting
from tracer.tui.commands import PaletteCommand
from tracer.tui.footer import FooterLine
from tracer.tui.heap import COLLECTOR, collect_before_freezing, freeze_heap, thaw_heap
from tracer.tui.source_view import SourceView, prepare_source
from tracer.tui.steady import Column, Row
from tracer.tui.step_screen import StepScreen
from tracer.tui.tensor_pane import TensorPane, loop_axes
from tracer.tui.text_pane import TextPane
from tracer.tui.timeline import Timeline
from tracer.variant import Stage, Variant

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost


Loader = Callable[["PluginHost | None"], ExploreSession]
"""Starts the variant, given the app's plugin host (None: the loader makes its own)."""


class ExploreScreen(StepScreen):
    """Stages of a variant, with its source, its tensors and a timeline."""

    HELP = (
        "Step through a variant as it runs. Every tensor of a step is on screen; loops "
        "whose sub-steps declare a dot product show their matrix filling in, one cell per "
        "step, with the products written out. The highlighted lines on the left are the "
        "code that ran; ◆ marks the statement that made the tensor, and the tracer's own "
        "plumbing is dimmed. z: overview of a large table or its numbers; w: a query's "
        "weight to each key."
    )

    def __init__(self, loader: Loader, title: str) -> None:
        super().__init__()
        self._loader = loader
        self.title_text = title
        self.session: ExploreSession | None = None
        self._narration: Text | None = None
        """The step shown's narration, before "step N of M" (which may change)."""
        self.error_shown = False
        self.failure: str | None = None
        """The error shown in place of the step the variant could not produce, if any."""

    def compose(self) -> ComposeResult:
        yield Header(icon="∑")
        yield Timeline(id="timeline")
        with Row(id="main"):
            with Column(id="left"):
                yield TextPane(id="narration")
                yield SourceView(id="source")
            yield TensorPane(id="tensors")
        yield FooterLine()

    @property
    def pane(self) -> TensorPane:
        return self.query_one(TensorPane)

    def tensor_pane(self) -> TensorPane | None:
        return self.pane

    def on_mount(self) -> None:
        self.title = visible(self.title_text, multiline=False)
        self.query_one("#source", SourceView).border_title = "source"
        self.query_one("#narration", TextPane).show(Text("Loading torch and the plugins…"))
        self.pane.loading = True
        # Start the heavy work only once the first frame is on screen.
        self.call_after_refresh(self._load)

    def on_unmount(self) -> None:
        # The heap was frozen after loading, so the collector would never stop the plugin's
        # worker process: stop it here, when the variant leaves the screen.
        if self.session is not None:
            self.session.close()
        thaw_heap()  # what this screen held can be collected; the next screen freezes anew

    @property
    def position(self) -> int:
        """The step on screen (the session's; -1 before the first)."""
        return self.session.position if self.session is not None else -1

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _load(self) -> ExploreSession:
        host_of = getattr(self.app, "plugin_host", None)
        session = self._loader(host_of() if host_of is not None else None)
        first = session.start()
        if first.source_file:
            # The plugin's file, highlighted (in the theme's shade) and mapped off the UI thread.
            prepare_source(first.source_file, self.app.current_theme.dark)
        collect_before_freezing()  # here, off the UI thread; the screen then freezes the rest
        return session

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "load":
            super().on_worker_state_changed(event)
            return
        if event.state == WorkerState.SUCCESS:
            self.pane.loading = False
            session = event.worker.result
            assert isinstance(session, ExploreSession)
            self._started(session)
        elif event.state == WorkerState.ERROR:
            self.pane.loading = False
            error = event.worker.error or RuntimeError("unknown error")
            self._failed(error)

    def _started(self, session: ExploreSession) -> None:
        freeze_heap()
        self.session = session
        self.app.variant_names = list(session.variant_names)  # type: ignore[attr-defined]
        variant = session.variant
        self.query_one(Timeline).set_items(
            (name, name + (" ⟳" if name in variant.loops else ""), _stage_tip(variant, name))
            for name in variant.stages
        )
        for warning in session.warnings:
            self.app.notify(warning, title="Plugin warning", severity="warning", markup=False)
        self.go(0)

    def _failed(self, error: BaseException) -> None:
        self.set_exit_status(error)
        self.error_shown = True
        self._show_failure("Could not run the variant.", error)

    def _show_failure(self, heading: str, error: BaseException, where: str = "") -> None:
        """The error in place of the step it stopped, with its plugin line in the source pane.

        Not a pop-up: q, ← and the rest of the keys keep working as on any step.
        """
        message = self.describe(error)
        self.failure = message
        self.pane.show_error(message)
        narration = Text(heading, style="bold")
        if where:
            narration.append("\n" + where, style="dim")
        self.query_one("#narration", TextPane).show(narration)
        location = getattr(error, "location", None)
        if location is not None and location.line is not None:
            self.query_one("#source", SourceView).show_file(location.path, (location.line,))

    # Showing a step -----------------------------------------------------------------

    def show_step(self) -> None:
        """Draw the session's view of the step it is on."""
        session = self.session
        if session is None:
            return
        view = session.view()
        if view.step is None:
            self._show_stop(view)
            return
        self.failure = None
        step = view.step
        # Three lines: what this is, its formula, where we are (fits narrow terminals).
        narration = Text()
        narration.append(visible(view.title, multiline=False), style="bold")
        if isinstance(step, Stage):
            try:
                self.pane.show_stage(step, view.tokens, view.query, formula=False)
            except Exception as error:  # a plugin's odd tensor must not crash the app
                self.pane.show_error(f"cannot show stage '{step.name}': {self.describe(error)}")
        else:
            narration.append(f" · cell ({view.cell})")
            try:
                self.pane.show_substep(
                    step,
                    view.canvas,
                    view.tokens,
                    formula=False,
                    canvas_axes=loop_axes(view.built),
                    query=view.query,
                )
            except Exception as error:
                self.pane.show_error(f"cannot show this sub-step: {self.describe(error)}")
        if step.formula:
            narration.append("\n" + step.formula)
        self._narration = narration
        self._show_narration(view)
        produced = next(iter(step.tensors), None) if isinstance(step, Stage) else None
        self.query_one("#source", SourceView).show_file(
            step.source_file, step.lines, produced=produced, files=step.files
        )
        self.query_one(Timeline).set_current(view.current, list(view.done))
        self.fit_columns()
        self._say_unused_padding()
        COLLECTOR.after_frame(self)
        ahead = session.ahead()
        if ahead is not None:
            # After the frame is painted, so the prefetch never competes with drawing it.
            self.call_after_refresh(self._prefetch, session, ahead)

    def fit_columns(self) -> None:
        source = self.query_one("#source", SourceView)
        self.give_left(self.query_one("#left"), self.pane.natural_width(), source.natural_width())

    def _show_narration(self, view: ExploreView) -> None:
        """The step's narration and where it is: "step N of M" once the total is known."""
        if self._narration is None or view.step is None:
            return
        narration = self._narration.copy()
        narration.append(f"\n{view.counter} · {view.where}", style="dim")
        if view.description:
            narration.append("\n\n" + view.description)
        for hint in view.hints:  # token labels inferred from the shape: say so
            narration.append("\n" + hint, style="dim")
        self.query_one("#narration", TextPane).show(narration)

    @work(thread=True, exclusive=True, exit_on_error=False, group="prefetch")
    def _prefetch(self, session: ExploreSession, index: int) -> None:
        """Compute the next step while the learner reads this one, so → shows it at once.

        Past the last step this is what finds that the trace has ended: the step shown
        then learns the total ("step 12 of 12", never "of ?" at the end).
        """
        if session.prefetch(index):
            self.app.call_from_thread(self._total_found, index - 1)

    def _say_unused_padding(self) -> None:
        """Once the run has ended: padding the inputs gave and the variant never read."""
        note = self.session.padding_note() if self.session is not None else None
        if note is not None:
            self.app.notify(
                visible(note), title="Padding not used", severity="warning", markup=False
            )

    def _total_found(self, index: int) -> None:
        session = self.session
        if session is None:
            return
        self._say_unused_padding()
        if index == session.position and not session.on_failure:
            self._show_narration(session.view())

    def _show_stop(self, view: ExploreView) -> None:
        """The variant failed: its error in place of the step it did not produce."""
        assert view.failure is not None
        self.error_shown = True
        self.set_exit_status(view.failure)  # quitting now says a plugin failed
        self._show_failure("The variant stopped with an error", view.failure, view.where)
        self.query_one(Timeline).set_current(view.current, list(view.done))

    # Moving: the session moves; the screen runs what takes long off the UI thread ---------

    def _move(self, move: Move) -> bool:
        """Draw where ``move`` went (its work, if any, in a worker); whether it moved."""
        if isinstance(move, Waiting):
            # Anything the variant still has to compute runs in a worker, however short: a
            # variant that sleeps or never returns must leave q, Esc and ctrl+c working.
            self.run_pending(move.pending, self._finished)
            return True
        if isinstance(move, (Moved, Failed)):
            self.show_step()
        return move.moved

    def _finished(self, move: Move) -> None:
        if isinstance(move, Refused):
            self.app.notify(move.reason, severity="warning")
        elif isinstance(move, AtEnd):
            self.show_step()  # the run ended first: the step on screen again
        else:
            self._move(move)

    def go(self, index: int) -> bool:
        """Show step ``index``: now if it is cheap, else in a worker. False if there is none."""
        return self.session is not None and self._move(self.session.go(index, wait=False))

    def step_next(self) -> bool:
        return self.session is not None and self._move(self.session.next(wait=False))

    def step_previous(self) -> bool:
        return self.session is not None and self._move(self.session.back(wait=False))

    def step_start(self) -> None:
        if self.session is not None:
            self._move(self.session.first(wait=False))

    def step_end(self) -> None:
        if self.session is not None:
            self._move(self.session.last(wait=False))

    def step_loop_end(self) -> None:
        if self.session is not None:
            self._move(self.session.loop_end(wait=False))

    def go_to_stage(self, name: str) -> None:
        if self.session is not None:
            self._move(self.session.stage(name, wait=False))

    def next_tensor(self) -> None:
        self.pane.next_tensor()

    def show_progress(self, message: str) -> None:
        self.query_one("#narration", TextPane).show(Text(message))

    def job_failed(self, error: BaseException) -> None:
        if self.session is not None:
            self.session.stopped()  # onto the failure, if the run failed
        self.show_step()

    def job_cancelled(self) -> None:
        self.show_step()

    def on_timeline_selected(self, event: Timeline.Selected) -> None:
        if not self.busy:
            self.stop_autoplay()
            self.go_to_stage(event.key)

    # Command palette ----------------------------------------------------------------

    def palette_commands(self) -> list[PaletteCommand]:
        session = self.session
        if session is None:
            return []
        commands = [
            PaletteCommand(
                f"Go to stage: {name}",
                _stage_tip(session.variant, name),
                lambda name=name: self.go_to_stage(name),  # type: ignore[misc]
            )
            for name in session.variant.stages
        ]
        commands.append(PaletteCommand("Go to the first step", "", self.step_start))
        commands.append(
            PaletteCommand("Go to the last step", "runs the variant to the end", self.step_end)
        )
        return commands


def _stage_tip(variant: Variant, name: str) -> str:
    loop = " (built by a loop: step through it cell by cell)" if name in variant.loops else ""
    return f"stage {name} of {variant.name}{loop}"
