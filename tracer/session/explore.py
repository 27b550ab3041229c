"""The explorer's session: a variant stepped through without a lesson. No Textual.

:func:`explore_loader` loads the plugins and starts a variant under a
:class:`~tracer.tracing.stepper.Stepper`, which numbers its stages and loop
sub-steps so the explorer can step forwards and back on a run that only goes
forwards. The :class:`ExploreSession` it returns owns the position and the moves
(next, back, first, last, a loop's end, a stage by name), each returning a
:class:`~tracer.session.moves.Move`, and gives the :class:`ExploreView` of the
step it is on: the step, "stage 2 of 5" or "pair 8 of 36", "step 4 of ?", the
timeline's entries, the loop's canvas. The app's explorer and ``attn explore
--plain`` both draw it, and neither touches the stepper::

    from tracer.session.explore import TraceOptions, explore_loader
    session = explore_loader("naive-loop", TraceOptions())
    session.start()                          # the first step, or the variant's error
    session.go(0); view = session.view()     # a Stage or a SubStep, and where it is
    session.next(); session.loop_end(); session.back()
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from tracer.errors import PluginError, TracerError
from tracer.plugin_host import PluginHost
from tracer.render.labels import axes_hint
from tracer.session.moves import (
    AT_END,
    MOVED,
    Failed,
    Move,
    Pending,
    Refused,
    Waiting,
)
from tracer.session.places import loop_noun, loop_place
from tracer.tracing.runner import TraceOptions, build_context, resolve_inputs
from tracer.tracing.stepper import Cancelled, LoopCanvas, Stepper, cell_of
from tracer.variant import Stage, SubStep, Variant

if TYPE_CHECKING:
    import torch

    from tracer.tracing import Trace

T = TypeVar("T")

__all__ = [
    "Cancelled",
    "ExploreSession",
    "ExploreView",
    "LoopCanvas",
    "Stepper",
    "TraceOptions",
    "accumulated",
    "cell_of",
    "explore_loader",
    "loop_noun",
    "loop_place",
]


@dataclass(frozen=True)
class ExploreView:
    """Everything the explorer draws for the step it is on, decided by the session."""

    index: int
    """The step's number from 0 (on the failure: one past the last step the run produced)."""
    step: Stage | SubStep | None
    """None: the variant stopped with ``failure`` here, in place of a step."""
    where: str
    """Where it is: "stage 2 of 5", "pair 8 of 36" (or "pair 8" while the loop's length is
    unknown), or on the failure what ← does."""
    counter: str
    """"step 4 of 12" ("of ?" until the run has ended); empty on the failure."""
    tokens: tuple[str, ...]
    query: int | None
    current: str | None
    """The timeline's entry for this step (the stage, or the stage its loop builds)."""
    done: tuple[str, ...]
    """The timeline's entries already passed."""
    failure: BaseException | None = None
    canvas: LoopCanvas | None = None
    """The matrix the loop is filling (a sub-step of a loop with a declared dot product)."""
    built: Stage | None = None
    """The stage the loop builds, once the run has got there (its axes name the canvas's)."""
    description: str = ""
    """The variant's description (on the first step only)."""
    hints: tuple[str, ...] = ()
    """One line per axis whose token labels were guessed from the shape."""

    @property
    def title(self) -> str:
        """The step's heading: the stage's title, or the loop and the stage it builds."""
        if isinstance(self.step, Stage):
            return self.step.title
        if isinstance(self.step, SubStep):
            return f"Loop building “{self.step.stage}”"
        return "The variant stopped with an error"

    @property
    def cell(self) -> str:
        """A sub-step's position ("0, 2"); empty for a stage."""
        if isinstance(self.step, SubStep):
            return ", ".join(str(p) for p in self.step.position)
        return ""


@dataclass
class ExploreSession:
    """A running variant, and where the explorer is in it."""

    variant: Variant
    stepper: Stepper
    """The run, numbered: the session's to ask, never a front end's."""
    query: int | None = None
    warnings: tuple[str, ...] = ()
    variant_names: tuple[str, ...] = ()
    position: int = -1
    """The step shown (-1 before the first; the run's total while on its failure)."""
    _padding_said: bool = field(default=False, repr=False)

    # Starting and stopping ---------------------------------------------------------

    def start(self) -> Stage | SubStep:
        """Run the variant to its first step (a loading worker's job); raises what stopped it."""
        try:
            first = self.stepper.get(0)
        except IndexError:
            # No first step: the variant failed before yielding one (or yields nothing).
            if self.stepper.error is not None:
                raise self.stepper.error from None
            raise PluginError(f"variant '{self.variant.name}' yielded no steps") from None
        return first

    def close(self) -> None:
        """Stop the run (a plugin's worker process stops now)."""
        self.stepper.close()

    @property
    def trace(self) -> Trace:
        return self.stepper.trace

    @property
    def step(self) -> Stage | SubStep | None:
        """The step the session is on (None before the first, and on the failure)."""
        if self.position < 0 or self.on_failure:
            return None
        return self.stepper.get(self.position)

    @property
    def on_failure(self) -> bool:
        stepper = self.stepper
        return stepper.error is not None and self.position == stepper.total

    @property
    def total(self) -> int | None:
        """How many steps the run has, once it has ended."""
        return self.stepper.total

    @property
    def error(self) -> TracerError | None:
        """What stopped the run early, once it has."""
        return self.stepper.error

    # Moving -----------------------------------------------------------------------

    def go(self, index: int, *, wait: bool = True) -> Move:
        """To step ``index``. ``wait`` False: a step not yet computed is :class:`Waiting`."""
        if index < 0:
            return AT_END
        stepper = self.stepper
        if stepper.total is not None and index >= stepper.total:
            return self.stopped()
        if stepper.known(index):
            self.position = index
            return MOVED

        def work(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> None:
            with contextlib.suppress(IndexError):  # the run ended first: finishing says so
                stepper.get(index, cancelled=cancelled, progress=progress)

        def finish(_: object) -> Move:
            if stepper.known(index):
                self.position = index
                return MOVED
            return self.stopped()

        if wait:
            work(_never, _quiet)
            return finish(None)
        return Waiting(Pending(f"Running to step {index + 1:,}", work, finish))

    def next(self, *, wait: bool = True) -> Move:
        return self.go(self.position + 1, wait=wait)

    def back(self, *, wait: bool = True) -> Move:
        return self.go(self.position - 1, wait=wait)

    def first(self, *, wait: bool = True) -> Move:
        return self.go(0, wait=wait)

    def last(self, *, wait: bool = True) -> Move:
        """To the run's last step (running it to its end)."""
        stepper = self.stepper
        if stepper.total is not None:
            return self.go(stepper.total - 1, wait=wait)

        def work(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int:
            return stepper.last(cancelled=cancelled, progress=progress)

        return self._then("Running to the end", work, self.go, wait)

    def loop_end(self, *, wait: bool = True) -> Move:
        """To the stage that ends the loop on screen (the next stage)."""
        stepper, here = self.stepper, self.position

        def work(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int | None:
            return stepper.next_stage(here, cancelled=cancelled, progress=progress)

        def finish(found: int | None) -> Move:
            return AT_END if found is None else self.go(found)

        return self._then("Running to the end of the loop", work, finish, wait)

    def stage(self, name: str, *, wait: bool = True) -> Move:
        """To stage ``name`` (running the variant until it comes)."""
        stepper = self.stepper
        number = stepper.stage_number(name)
        if number is not None:
            return self.go(number, wait=wait)

        def work(cancelled: Callable[[], bool], progress: Callable[[int], None]) -> int | None:
            return stepper.find_stage(name, cancelled=cancelled, progress=progress)

        def finish(found: int | None) -> Move:
            if found is None:
                return Refused(f"The variant produced no stage '{name}'")
            return self.go(found)

        return self._then(f"Running to stage {name}", work, finish, wait)

    def _then(
        self,
        description: str,
        work: Callable[[Callable[[], bool], Callable[[int], None]], T],
        finish: Callable[[T], Move],
        wait: bool,
    ) -> Move:
        """Always run in a worker when not waiting: even a short run may hang in a plugin."""
        if wait:
            return finish(work(_never, _quiet))
        return Waiting(Pending(description, work, finish))

    def stopped(self) -> Move:
        """Past the run's last step: on to its failure if it failed (:class:`Failed`), else
        :class:`AtEnd`. Also what a front end asks when a move's work raised."""
        stepper = self.stepper
        error = stepper.error
        if error is None or stepper.total is None or self.position < stepper.total - 1:
            return AT_END
        moved = self.position != stepper.total
        self.position = stepper.total
        return Failed(error, moved=moved)

    # Reading ahead ----------------------------------------------------------------

    def ahead(self) -> int | None:
        """The step worth computing while the learner reads this one (None: none is)."""
        stepper, after = self.stepper, self.position + 1
        if stepper.finished or stepper.known(after):
            return None
        return after

    def prefetch(self, index: int) -> bool:
        """Compute step ``index`` ahead (a worker's job; never raises); True once this has
        found the run's end (the step before it then learns "of 12")."""
        self.stepper.prefetch(index)
        return self.stepper.total is not None

    def padding_note(self) -> str | None:
        """Once the run has ended: the padding the inputs gave and the variant never read,
        in one line, said once (None after that, or if there is none)."""
        note = self.stepper.padding_note
        if note is None or self._padding_said:
            return None
        self._padding_said = True
        return note

    # The view ---------------------------------------------------------------------

    def view(self) -> ExploreView:
        """The step the session is on, with everything drawing it needs."""
        stepper = self.stepper
        index = self.position
        stages = self.variant.stages
        passed = tuple(stepper.stages[n].name for n in stepper.stage_numbers if n < index)
        if self.on_failure:
            assert stepper.error is not None and stepper.total is not None
            where = f"step {stepper.total + 1:,} · ← goes back to the last step it produced"
            return ExploreView(
                index, None, where, "", stepper.tokens, self.query, None, passed, stepper.error
            )
        step = stepper.get(index)
        canvas = built = None
        if isinstance(step, Stage):
            current = step.name
            where = (
                f"stage {stages.index(current) + 1} of {len(stages)}"
                if current in stages
                else "stage"
            )
        else:
            current = step.stage
            where = loop_place(step, stepper.loop_total(index, step))
            number = stepper.stage_number(step.stage)
            built = stepper.stages.get(number) if number is not None else None
            canvas = stepper.canvases.get(step.stage)
        total = stepper.total
        counter = f"step {index + 1:,} of {f'{total:,}' if total is not None else '?'}"
        return ExploreView(
            index,
            step,
            where,
            counter,
            stepper.tokens,
            self.query,
            current,
            passed,
            canvas=canvas,
            built=built,
            description=self.variant.description if index == 0 else "",
            hints=tuple(axes_hint(name, step.guessed_axes) for name in step.guessed_axes),
        )


def _never() -> bool:
    return False


def _quiet(_done: int) -> None:
    return None


def explore_loader(
    variant: str,
    options: TraceOptions,
    plugin_dirs: list[str] | tuple[str, ...] = (),
    host: PluginHost | None = None,
) -> ExploreSession:
    """Load the plugins (unless ``host`` has) and start ``variant`` (in a worker: imports torch)."""
    if host is None:
        host = PluginHost(plugin_dirs)
    found = host.variant(variant)
    inputs = resolve_inputs(options.inputs, found)
    context = build_context(inputs, options, variant=found)
    stepper = Stepper(lambda: host.start(variant, context))
    warnings = tuple(
        f"plugin '{record.name}' failed: {record.error} (see 'attn plugins')"
        for record in host.failures
    )
    return ExploreSession(found, stepper, context.query, warnings, tuple(sorted(host.variants)))


def accumulated(
    before: torch.Tensor, weight: torch.Tensor, value: torch.Tensor
) -> torch.Tensor | None:
    """``before + weight × value`` as a declared accumulation computes it (None: no fit)."""
    # Here, not at the top: the checks import torch, and the app imports this module before
    # its first frame.
    from tracer.tracing.checks import accumulated as compute

    return compute(before, weight, value)
