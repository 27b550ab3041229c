"""What the explorer and the lesson screen share: stepping keys, auto-play, busy work, layout.

Every binding has an id (``attn.next``, ...) so users can remap it with
``ATTN_KEYMAP`` (see :mod:`tracer.tui.app`). Moves that need the variant to
run (one step or the end of a 262,144-step loop) run in a thread worker that
reports progress after a moment and stops on Esc; steps already computed are
shown on the spot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual import events, messages, work
from textual.binding import Binding, BindingType
from textual.css.scalar import Scalar
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.worker import Worker, WorkerState, get_current_worker

from tracer.errors import TracerError
from tracer.session.moves import Cancelled, Move, Pending
from tracer.tui import textual_hooks as hooks
from tracer.tui.backdrop import Backdrop
from tracer.tui.footer import FooterLine
from tracer.tui.steady import SteadyCompositor, inside_shown
from tracer.tui.tensor_pane import TensorPane

SPEEDS = (3.0, 2.0, 1.0, 0.5, 0.25, 0.1, 0.05, 0.02)
"""Seconds per step for auto-play; ``+`` and ``-`` move along this list."""
DEFAULT_SPEED = 2
SYNC_STEPS = 200
"""A loop's end is looked up on the spot only if that costs at most this many steps.

Every step the variant still has to compute runs in a worker, however short, so a
variant that sleeps or never returns leaves q, Esc and ctrl+c working."""
PROGRESS_DELAY = 0.3
"""Seconds a step may compute before the screen says it is still running."""
NARROW = 100
TINY = 60
"""Below this width the footer leaves out the palette's key (ctrl+p still opens it)."""
SHORT = 24
LEFT_SHARE = 0.45
"""The left column's share of the width (``#left`` in app.tcss) unless the tensors need less."""

Progress = Callable[[int], None]
LongJob = Callable[[Callable[[], bool], Progress], Any]


def _dropped_unseen(message: messages.Update | messages.Layout) -> bool:
    """Stop ``message`` if it comes from a widget inside a hidden one; whether it was."""
    if not hooks.hooks_on() or inside_shown(message.widget):
        return False
    message.stop()
    message.prevent_default()
    return True


class StepScreen(Screen[None], Backdrop):
    """Base for screens that step through something: keys, auto-play and background work."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,n,space", "next", "Next", key_display="→", id="attn.next"),
        Binding("left,p", "previous", "Back", key_display="←", id="attn.previous"),
        Binding("home,g", "start", "Start", id="attn.start", show=False),
        Binding("end,G", "end", "End", id="attn.end", show=False),
        Binding("e", "loop_end", "Loop end", id="attn.loop_end", tooltip="End of loop"),
        # One key, two bindings: the footer says what "a" does now (Play, or Pause while playing).
        Binding("a", "autoplay", "Play", id="attn.autoplay"),
        Binding("a", "pause", "Pause", id="attn.autoplay"),
        Binding(
            "plus,equals_sign", "faster", "Faster", key_display="+", id="attn.faster", show=False
        ),
        Binding("minus", "slower", "Slower", key_display="-", id="attn.slower", show=False),
        Binding("t", "next_tensor", "Next tensor", id="attn.tensor", show=False),
        Binding(
            "z", "zoom", "Zoom", id="attn.zoom", tooltip="Overview of the whole table / numbers"
        ),
        Binding(
            "w",
            "tokens",
            "Tokens",
            id="attn.tokens",
            tooltip="Token to token: a query's weight to each key",
        ),
        Binding("escape", "cancel", "Stop", id="attn.cancel", show=False),
    ]

    if hooks.FOCUS_REPAINT:
        # Textual's ``focused`` repaints the whole screen when the focus moves, in a frame of
        # its own after the step's (a quiz takes the focus, the step after it drops it): the
        # widgets that gain and lose the focus are restyled and repainted on their own, so
        # that second frame draws nothing new. The same reactive, without the repaint.
        focused: Reactive[Widget | None] = Reactive(None, repaint=False)

        def _watch_focused(self) -> None:
            super()._watch_focused()  # type: ignore[no-untyped-call]  # Textual's, untyped
            if not hooks.hooks_on():
                self.refresh()  # the speed-ups off: Textual's whole-screen repaint

    if hooks.UNSEEN_MESSAGES:
        # Textual's handlers of a widget's requests to be repainted or laid out. One inside a
        # hidden widget (tables drawn ahead into a pane this step hides) is on no frame: told,
        # the screen lays itself out and paints an empty frame for it while the learner reads.
        # Showing the hidden one lays it out and paints it whole in any case (Textual has
        # emptied the arrangements it kept of it before the request reaches the screen).

        async def _on_update(self, message: messages.Update) -> None:
            if not _dropped_unseen(message):
                await super()._on_update(message)

        async def _on_layout(self, message: messages.Layout) -> None:
            if not _dropped_unseen(message):
                await super()._on_layout(message)

    def __init__(self, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        if hooks.FULL_MAP:
            self._compositor = SteadyCompositor()  # one arrangement per layout pass
        self.speed = DEFAULT_SPEED
        self._autoplay: Timer | None = None
        self._after_job: Callable[[Any], None] | None = None
        self._progress_timer: Timer | None = None

    # To implement ------------------------------------------------------------------

    def step_next(self) -> bool:
        """Move one step forward; False at the end."""
        raise NotImplementedError

    def step_previous(self) -> bool:
        raise NotImplementedError

    def step_start(self) -> None:
        raise NotImplementedError

    def step_end(self) -> None:
        raise NotImplementedError

    def step_loop_end(self) -> None:
        raise NotImplementedError

    def next_tensor(self) -> None:
        """Show the step's next tensor, if it has several."""

    def show_progress(self, message: str) -> None:
        """Say what a long job is doing (the tensor pane shows it)."""

    def job_failed(self, error: BaseException) -> None:
        """A long job raised."""
        self.app.notify(str(error), title="Error", severity="error")

    # Layout ------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")
        # Narrow: the footer's keys closer together, so the last one ("? Help") is not cut
        # off by the palette's key on the right.
        for footer in self.query(FooterLine):
            footer.compact = event.size.width < NARROW
            # Too narrow for the keys at all: they are clipped at the edge, not under ^p.
            footer.show_command_palette = event.size.width >= TINY
        self.set_class(event.size.height < SHORT, "-short")
        self.fit_columns()

    def fit_columns(self) -> None:
        """Split the width between the code and the tensors for what is on screen now."""

    def give_left(
        self, left: Widget, tensors: int | None, source: int, share: float = LEFT_SHARE
    ) -> int:
        """Widen ``left`` (the code) into the room the tensors do not need, up to ``source``.

        ``tensors`` and ``source`` are the columns each side needs to draw whole;
        ``tensors`` None means as much as it can get. The left column never gets
        less than its share from the stylesheet, so a large table keeps its room.
        Returns the columns ``left`` is given (the whole width on a narrow screen).
        """
        width = self.size.width
        wanted: int | None = None
        if tensors is not None and width >= NARROW:
            room = min(width - tensors, source)
            if room > width * share:
                wanted = room
        # A share other than the stylesheet's is set on the widget (not as a class, which
        # would restyle every pane in the column); a narrow screen's stylesheet width stays.
        width_set: Scalar | None = None
        if wanted is not None:
            width_set = Scalar.from_number(wanted)
        elif share != LEFT_SHARE and width >= NARROW:
            width_set = Scalar.parse(f"{share * 100:g}%")
        if left.styles.width != width_set:
            left.styles.width = width_set
        if width < NARROW:
            return width
        return wanted if wanted is not None else int(width * share)

    # Actions -----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return any(w.group == "long" and w.is_running for w in self.workers)

    def action_next(self) -> None:
        if not self.busy:
            self.step_next()

    def action_previous(self) -> None:
        if not self.busy:
            self.stop_autoplay()
            self.step_previous()

    def action_start(self) -> None:
        if not self.busy:
            self.stop_autoplay()
            self.step_start()

    def action_end(self) -> None:
        if not self.busy:
            self.stop_autoplay()
            self.step_end()

    def action_loop_end(self) -> None:
        if not self.busy:
            self.step_loop_end()

    def action_next_tensor(self) -> None:
        self.next_tensor()

    def action_zoom(self) -> None:
        pane = self.tensor_pane()
        if pane is not None:
            pane.toggle_zoom()

    def action_tokens(self) -> None:
        pane = self.tensor_pane()
        if pane is not None and not pane.toggle_tokens():
            self.app.notify(
                "The token view is for attention weights (rows that sum to 1)", timeout=2
            )

    def tensor_pane(self) -> TensorPane | None:
        """The pane the zoom and token keys act on."""
        return None

    def action_cancel(self) -> None:
        # Esc also leaves a text box (a quiz answer), so the stepping keys work again.
        self.set_focus(None)
        self.stop_autoplay()
        for worker in self.workers:
            if worker.group == "long":
                worker.cancel()

    # Auto-play ---------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return self._autoplay is not None

    def action_autoplay(self) -> None:
        if self.playing:
            self.stop_autoplay()
            self.app.notify("Auto-play off", timeout=1.5)
        else:
            self._start_autoplay()
            self.app.notify(
                f"Auto-play on: {SPEEDS[self.speed]:g} s per step (+/- to change)", timeout=1.5
            )

    def action_pause(self) -> None:
        if self.playing:
            self.action_autoplay()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "autoplay":
            return not self.playing
        if action == "pause":
            return self.playing
        return True

    def _start_autoplay(self) -> None:
        was_playing = self.playing
        if self._autoplay is not None:
            self._autoplay.stop()
        self._autoplay = self.set_interval(SPEEDS[self.speed], self._tick)
        self.set_class(True, "-playing")
        if not was_playing:
            self.refresh_bindings()  # the footer now offers Pause

    def stop_autoplay(self) -> None:
        if self._autoplay is None:
            return
        self._autoplay.stop()
        self._autoplay = None
        self.set_class(False, "-playing")
        self.refresh_bindings()  # the footer offers Play again

    def _tick(self) -> None:
        if self.busy:
            return
        if not self.step_next():
            self.stop_autoplay()

    def action_faster(self) -> None:
        self._change_speed(+1)

    def action_slower(self) -> None:
        self._change_speed(-1)

    def _change_speed(self, delta: int) -> None:
        self.speed = max(0, min(len(SPEEDS) - 1, self.speed + delta))
        if self.playing:
            self._start_autoplay()
        self.app.notify(f"Auto-play speed: {SPEEDS[self.speed]:g} s per step", timeout=1.5)

    # Long jobs ---------------------------------------------------------------------

    def run_long(self, description: str, job: LongJob, then: Callable[[Any], None]) -> None:
        """Run ``job(cancelled, progress)`` in a thread; call ``then(result)`` back here.

        The "running…" message appears only if the job is still running after a
        moment, so a quick step does not flash it.
        """
        self._after_job = then
        if self._progress_timer is not None:
            self._progress_timer.stop()
        self._progress_timer = self.set_timer(
            PROGRESS_DELAY, lambda: self._still_running(description)
        )
        self._long(description, job)

    def run_pending(self, pending: Pending[Any], then: Callable[[Move], Any]) -> None:
        """Run a move's pending work in a thread, then finish the move here: ``then(move)``.

        The screen never learns what the work is (a loop's sub-step, a run to its end).
        """
        self.run_long(pending.description, pending.run, lambda _: then(pending.finish()))

    def _still_running(self, description: str) -> None:
        self._progress_timer = None
        if self.busy:
            self.show_progress(f"{description}… (Esc stops, q quits)")

    @work(thread=True, exclusive=True, exit_on_error=False, group="long")
    def _long(self, description: str, job: LongJob) -> Any:
        worker = get_current_worker()

        def progress(done: int) -> None:
            self.app.call_from_thread(
                self.show_progress, f"{description}: {done:,} steps computed… (Esc stops)"
            )

        return job(lambda: worker.is_cancelled, progress)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != "long" or not worker.is_finished:
            return
        if self._progress_timer is not None:
            self._progress_timer.stop()
            self._progress_timer = None
        then, self._after_job = self._after_job, None
        if event.state == WorkerState.SUCCESS and then is not None:
            then(worker.result)
        elif event.state == WorkerState.ERROR:
            error = worker.error
            if isinstance(error, Cancelled):
                self.job_cancelled()
            elif error is not None:
                self.job_failed(error)
        elif event.state == WorkerState.CANCELLED:
            self.job_cancelled()

    def job_cancelled(self) -> None:
        """Esc stopped a long job: redraw where we were."""

    def set_exit_status(self, error: BaseException) -> None:
        """Quitting after a failed load exits with the CLI's status for that error."""
        status = error.exit_status if isinstance(error, TracerError) else 1
        self.app.exit_status = status  # type: ignore[attr-defined]

    @staticmethod
    def describe(error: BaseException) -> str:
        if isinstance(error, TracerError):
            return str(error)
        return f"{type(error).__name__}: {error}"
