"""``attn explore VARIANT``: step through every stage and loop sub-step of one variant.

The screen paints at once; a thread worker then imports torch, loads the
plugins and computes the first step, while the tensor pane shows a loading
indicator. Steps are numbered by a :class:`~tracer.session.explore.ExploreSession`'s stepper,
which makes stepping back possible on a trace that only runs forwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import Footer, Header
from textual.worker import Worker, WorkerState

from tracer.errors import PluginError
from tracer.render.labels import axes_hint
from tracer.sanitize import visible
from tracer.session.explore import ExploreSession, Stepper
from tracer.tui.commands import PaletteCommand
from tracer.tui.loop_count import loop_place
from tracer.tui.source_view import SourceView, prepare_source
from tracer.tui.steady import Column, Row
from tracer.tui.step_screen import StepScreen, collect_before_freezing, freeze_heap, thaw_heap
from tracer.tui.tensor_pane import TensorPane, loop_axes
from tracer.tui.text_pane import TextPane
from tracer.tui.timeline import Timeline
from tracer.variant import Stage, SubStep, Variant

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
        self.position = -1
        self._narration: tuple[int, Text, Stage | SubStep, str] | None = None
        """The step shown: its number, its narration, the step, and where it is."""
        self.error_shown = False
        self.failure: str | None = None
        """The error shown in place of the step the variant could not produce, if any."""
        self._padding_said = False

    def compose(self) -> ComposeResult:
        yield Header(icon="∑")
        yield Timeline(id="timeline")
        with Row(id="main"):
            with Column(id="left"):
                yield TextPane(id="narration")
                yield SourceView(id="source")
            yield TensorPane(id="tensors")
        yield Footer()

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
            self.session.stepper.close()
        thaw_heap()  # what this screen held can be collected; the next screen freezes anew

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _load(self) -> ExploreSession:
        host_of = getattr(self.app, "plugin_host", None)
        session = self._loader(host_of() if host_of is not None else None)
        try:
            first = session.stepper.get(0)
        except IndexError:
            # No first step: the variant failed before yielding one (or yields nothing).
            if session.stepper.error is not None:
                raise session.stepper.error from None
            raise PluginError(f"variant '{session.variant.name}' yielded no steps") from None
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
        self.show_step(0)

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

    def show_step(self, index: int) -> None:
        session = self.session
        if session is None:
            return
        stepper = session.stepper
        try:
            step = stepper.get(index)
        except IndexError:
            self._report_stop()
            return
        self.position = index
        self.failure = None
        tokens = stepper.tokens
        variant = session.variant
        # Three lines: what this is, its formula, where we are (fits narrow terminals).
        narration = Text()
        if isinstance(step, Stage):
            narration.append(visible(step.title, multiline=False), style="bold")
            try:
                self.pane.show_stage(step, tokens, session.query, formula=False)
            except Exception as error:  # a plugin's odd tensor must not crash the app
                self.pane.show_error(f"cannot show stage '{step.name}': {self.describe(error)}")
            current = step.name
            where = (
                f"stage {variant.stages.index(step.name) + 1} of {len(variant.stages)}"
                if (step.name in variant.stages)
                else "stage"
            )
        else:
            cell = ", ".join(str(p) for p in step.position)
            narration.append(f"Loop building “{step.stage}”", style="bold")
            narration.append(f" · cell ({cell})")
            try:
                number = stepper.stage_number(step.stage)
                built = stepper.stages.get(number) if number is not None else None
                self.pane.show_substep(
                    step,
                    stepper.canvases.get(step.stage),
                    tokens,
                    formula=False,
                    canvas_axes=loop_axes(built),
                    query=session.query,
                )
            except Exception as error:
                self.pane.show_error(f"cannot show this sub-step: {self.describe(error)}")
            current = step.stage
            where = loop_place(step, stepper.loop_total(index, step))
        if step.formula:
            narration.append("\n" + step.formula)
        self._narration = (index, narration, step, where)
        self._show_narration()
        produced = next(iter(step.tensors), None) if isinstance(step, Stage) else None
        self.query_one("#source", SourceView).show_file(
            step.source_file, step.lines, produced=produced, files=step.files
        )
        done = [stepper.stages[n].name for n in stepper.stage_numbers if n < index]
        self.query_one(Timeline).set_current(current, done)
        self.fit_columns()
        self._say_unused_padding(stepper)
        if not stepper.finished and not stepper.known(index + 1):
            # After the frame is painted, so the prefetch never competes with drawing it.
            self.call_after_refresh(self._prefetch, stepper, index + 1)

    def fit_columns(self) -> None:
        source = self.query_one("#source", SourceView)
        self.give_left(self.query_one("#left"), self.pane.natural_width(), source.natural_width())

    def _show_narration(self) -> None:
        """The step's narration and where it is: "step N of M" once the total is known."""
        session, shown = self.session, self._narration
        if session is None or shown is None:
            return
        index, head, step, where = shown
        if isinstance(step, SubStep):  # the loop's length may have become known with the total
            where = loop_place(step, session.stepper.loop_total(index, step))
        narration = head.copy()
        total = session.stepper.total
        count = f"{total:,}" if total is not None else "?"
        narration.append(f"\nstep {index + 1:,} of {count} · {where}", style="dim")
        if index == 0 and session.variant.description:
            narration.append("\n\n" + session.variant.description)
        for name in step.guessed_axes:  # token labels inferred from the shape: say so
            narration.append("\n" + axes_hint(name, step.guessed_axes), style="dim")
        self.query_one("#narration", TextPane).show(narration)

    @work(thread=True, exclusive=True, exit_on_error=False, group="prefetch")
    def _prefetch(self, stepper: Stepper, index: int) -> None:
        """Compute the next step while the learner reads this one, so → shows it at once.

        Past the last step this is what finds that the trace has ended: the step shown
        then learns the total ("step 12 of 12", never "of ?" at the end).
        """
        stepper.prefetch(index)
        if stepper.total is not None:
            self.app.call_from_thread(self._total_found, index - 1)

    def _say_unused_padding(self, stepper: Stepper) -> None:
        """Once the run has ended: padding the inputs gave and the variant never read."""
        note = stepper.padding_note
        if note is not None and not self._padding_said:
            self._padding_said = True
            self.app.notify(
                visible(note), title="Padding not used", severity="warning", markup=False
            )

    def _total_found(self, index: int) -> None:
        if self.session is not None:
            self._say_unused_padding(self.session.stepper)
        shown = self._narration
        if shown is not None and shown[0] == index == self.position:
            self._show_narration()

    def _report_stop(self) -> bool:
        """The trace ended early and the learner stepped past its last step: show the error
        in place of the step that failed (one past the last good one). False otherwise."""
        session = self.session
        if session is None:
            return False
        stepper = session.stepper
        error = stepper.error
        if error is None or stepper.total is None or self.position < stepper.total - 1:
            return False
        self.error_shown = True
        self.set_exit_status(error)  # quitting now says a plugin failed
        moved = self.position != stepper.total
        self.position = stepper.total
        self._show_failure(
            "The variant stopped with an error",
            error,
            f"step {stepper.total + 1:,} · ← goes back to the last step it produced",
        )
        self.query_one(Timeline).set_current(
            None, [stepper.stages[n].name for n in stepper.stage_numbers]
        )
        return moved

    # Moving -------------------------------------------------------------------------

    def go(self, index: int) -> bool:
        """Show step ``index``: now if it is cheap, else in a worker. False if there is none."""
        session = self.session
        if session is None or index < 0:
            return False
        stepper = session.stepper
        if stepper.total is not None and index >= stepper.total:
            return self._report_stop()
        if stepper.known(index):
            self.show_step(index)
            return True
        # Anything the variant still has to compute runs in a worker, however short: a
        # variant that sleeps or never returns must leave q, Esc and ctrl+c working.

        def job(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int:
            stepper.get(index, cancelled=cancelled, progress=progress)
            return index

        self.run_long(f"Running to step {index + 1:,}", job, self.show_step)
        return True

    def step_next(self) -> bool:
        return self.go(self.position + 1)

    def step_previous(self) -> bool:
        return self.go(self.position - 1)

    def step_start(self) -> None:
        self.go(0)

    def step_end(self) -> None:
        session = self.session
        if session is None:
            return
        stepper = session.stepper
        if stepper.total is not None:
            self.go(stepper.total - 1)
            return
        self.run_long(
            "Running to the end",
            lambda cancelled, progress: stepper.last(cancelled=cancelled, progress=progress),
            self.show_step,
        )

    def step_loop_end(self) -> None:
        session = self.session
        if session is None:
            return
        stepper = session.stepper

        def job(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int | None:
            return stepper.next_stage(self.position, cancelled=cancelled, progress=progress)

        def then(found: int | None) -> None:
            if found is not None:
                self.show_step(found)

        self.run_long("Running to the end of the loop", job, then)

    def go_to_stage(self, name: str) -> None:
        session = self.session
        if session is None:
            return
        stepper = session.stepper
        number = stepper.stage_number(name)
        if number is not None:
            self.go(number)
            return

        def job(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int | None:
            return stepper.find_stage(name, cancelled=cancelled, progress=progress)

        def then(found: int | None) -> None:
            if found is None:
                self.app.notify(f"The variant produced no stage '{name}'", severity="warning")
            else:
                self.show_step(found)

        self.run_long(f"Running to stage {name}", job, then)

    def next_tensor(self) -> None:
        self.pane.next_tensor()

    def show_progress(self, message: str) -> None:
        self.query_one("#narration", TextPane).show(Text(message))

    def job_failed(self, error: BaseException) -> None:
        if not self._report_stop():
            self.show_step(self.position)

    def job_cancelled(self) -> None:
        self.show_step(self.position)

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
