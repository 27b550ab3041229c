"""Random access to the steps of a trace that only runs forwards.

A :class:`~tracer.tracing.Trace` is a generator: it can hand out the next
step and nothing else. The learner also wants to step back and to jump. The
:class:`Stepper` numbers every step (stages and loop sub-steps) in the order
the variant yields them and keeps:

* every stage, forever (there are a dozen of them);
* the most recent ``window`` steps, so stepping back a few sub-steps is a
  dictionary look-up;
* for each loop whose sub-steps declare a :class:`~tracer.equations.Dot`
  equation with a single-number result, the value each cell received and the
  sub-step that wrote it (two flat arrays), so the matrix can be drawn
  "filled up to sub-step m". Loops that declare nothing (or an accumulation)
  get no canvas: a matrix drawn from a guess could be the wrong tensor.

A step that has fallen out of the window is recomputed: variants are
deterministic for a given context (dropout uses the context's seed), so a
fresh trace of the same variant replays the same steps. Replaying to step
``k`` refills the window with the steps just before ``k``, so a learner
holding ← pays for one replay per ``window`` steps, not one per key press.

Nothing here imports torch or Textual; a step's tensors are torch tensors. The
app, ``attn explore --plain`` and anything else that walks a trace share it.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tracer.errors import PluginError, TracerError
from tracer.variant import Dot, Stage, Step, SubStep

if TYPE_CHECKING:
    from tracer.tracing import Trace

DEFAULT_WINDOW = 4096
LOCK_POLL_S = 0.1
UNFILLED = -1


class Cancelled(Exception):
    """A long computation was cancelled by the caller."""


class LoopCanvas:
    """The matrix a loop is filling, one cell per sub-step.

    ``order[r * cols + c]`` is the index of the sub-step that wrote the cell
    (``UNFILLED`` if none has), so the same canvas draws any moment of the loop.
    """

    def __init__(self, stage: str, rows: int, cols: int, result: str = "") -> None:
        self.stage = stage
        self.result = result
        """The name of the number each sub-step writes (its ``Dot`` equation's result): what
        the canvas holds, which need not be the stage's tensor (a loop may write D while it
        builds dS)."""
        self.rows = rows
        self.cols = cols
        self.values = array("d", [math.nan]) * (rows * cols)
        self.order = array("q", [UNFILLED]) * (rows * cols)
        self.last_index = UNFILLED
        self.low = math.inf
        self.high = -math.inf
        """The finite range of every value written so far: the heatmap's scale."""
        self.version = 0
        """Counts the writes (and growths): a drawing of the canvas is good while it holds."""

    def _grow(self, rows: int, cols: int) -> None:
        values = array("d", [math.nan]) * (rows * cols)
        order = array("q", [UNFILLED]) * (rows * cols)
        for r in range(self.rows):
            values[r * cols : r * cols + self.cols] = self.values[
                r * self.cols : (r + 1) * self.cols
            ]
            order[r * cols : r * cols + self.cols] = self.order[r * self.cols : (r + 1) * self.cols]
        self.rows, self.cols, self.values, self.order = rows, cols, values, order
        self.version += 1

    def record(self, row: int, col: int, index: int, value: float) -> None:
        if row >= self.rows or col >= self.cols:
            self._grow(max(self.rows, row + 1), max(self.cols, col + 1))
        cell = row * self.cols + col
        self.values[cell] = value
        self.order[cell] = index
        self.version += 1
        self.last_index = max(self.last_index, index)
        if math.isfinite(value):
            self.low = min(self.low, value)
            self.high = max(self.high, value)

    def value(self, row: int, col: int, upto: int) -> float | None:
        """The cell's value as it was after sub-step ``upto``; None while still empty."""
        cell = row * self.cols + col
        order = self.order[cell]
        if order == UNFILLED or order > upto:
            return None
        return self.values[cell]


def cell_of(step: SubStep) -> tuple[int, int] | None:
    """Which (row, column) of its loop's matrix a sub-step writes, if it is a cell."""
    position = step.position
    if len(position) == 2:
        return position[0], position[1]
    if len(position) == 1:
        return 0, position[0]
    return None


def scalar_of(step: SubStep) -> tuple[str, float] | None:
    """The single number a sub-step declares it computed (a ``Dot`` equation's result).

    Only a declared equation says which tensor is the loop's cell; any other
    single number (a weight being multiplied in) belongs to a different matrix.
    """
    equation = next((e for e in step.equations if isinstance(e, Dot)), step.equation)
    if not isinstance(equation, Dot):
        return None
    tensor = step.tensors.get(equation.result)
    if getattr(tensor, "ndim", None) != 0:
        return None
    return equation.result, float(tensor)  # type: ignore[arg-type]


class Stepper:
    """Steps of a trace by number, computed lazily, with a bounded memory of sub-steps."""

    def __init__(self, factory: Callable[[], Trace], window: int = DEFAULT_WINDOW) -> None:
        self._factory = factory
        self.window = max(window, 1)
        self.trace = factory()
        self.produced = 0
        """How many steps the current trace has handed out."""
        self.replays = 0
        """How many times the trace was re-run to reach an evicted step (for tests and stats)."""
        self._recent: OrderedDict[int, Step] = OrderedDict()
        self.stages: dict[int, Stage] = {}
        """Every stage seen so far, by step number."""
        self.stage_numbers: list[int] = []
        self.canvases: dict[str, LoopCanvas] = {}
        self.total: int | None = None
        """The number of steps, once the trace has finished."""
        self.error: TracerError | None = None
        """What stopped the trace early, if anything did."""
        self.padding_note: str | None = None
        """Once the trace has ended: one line saying that the padding the inputs give was not
        used, when its variant never read ``run.padding`` (see ``Trace.padding_note``)."""
        self.lock = threading.RLock()
        """Held while the variant runs: a background prefetch and the UI never run it at once."""
        self._should_stop: Callable[[], bool] | None = None
        """The current caller's ``cancelled``: a trace in a worker process polls it mid-step."""
        self._stale = False
        """The trace was stopped in the middle of a step and must be run again to go on."""
        self._interrupt = threading.Event()
        """Set when a caller gives up waiting: whatever computes now (a prefetch) stops."""
        self.trace.should_stop = self._stop_requested

    # Queries -------------------------------------------------------------------

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.trace.tokens

    @property
    def finished(self) -> bool:
        return self.total is not None

    def known(self, index: int) -> bool:
        """Whether step ``index`` can be returned without running the variant."""
        return index in self.stages or index in self._recent

    def cost(self, index: int) -> int:
        """Roughly how many steps the variant must run to reach ``index``."""
        if self.known(index):
            return 0
        if index >= self.produced:
            return index - self.produced + 1
        return index + 1

    def loop_total(self, index: int, step: SubStep) -> int | None:
        """How many sub-steps the loop holding step ``index`` (which is ``step``) has.

        The tracer numbers a loop's sub-steps from the stage before it, and a stage
        ends the loop, so the count is exact once the stage after it has been seen
        (or the trace ended cleanly); before that, None: nothing is estimated.
        """
        first = index - step.index
        after = next((number for number in self.stage_numbers if number > index), None)
        if after is not None:
            return after - first
        if self.total is not None and self.error is None:
            return self.total - first
        return None  # not reached yet, or the variant failed inside the loop

    def stage_number(self, name: str) -> int | None:
        """The step number of the (first) stage called ``name``, if it has been reached."""
        for number in self.stage_numbers:
            if self.stages[number].name == name:
                return number
        return None

    # Computing -------------------------------------------------------------------

    def get(
        self,
        index: int,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Step:
        """Step number ``index`` (0-based). IndexError past the end; TracerError if the variant fails."""
        # A step already computed never waits for the lock: a prefetch stuck in a variant
        # that never returns must not freeze whoever is only looking back.
        known = self.stages.get(index) or self._recent.get(index)
        if known is not None:
            return known
        with self._locked(cancelled):
            return self._get(index, cancelled, progress)

    def _get(
        self,
        index: int,
        cancelled: Callable[[], bool] | None,
        progress: Callable[[int], None] | None,
    ) -> Step:
        if index < 0:
            raise IndexError(index)
        if index in self.stages:
            return self.stages[index]
        if index in self._recent:
            return self._recent[index]
        if self.total is not None and index >= self.total:
            raise IndexError(index)
        if index < self.produced:
            self._restart()
        while self.produced <= index:
            if cancelled is not None and self.produced % 256 == 0 and cancelled():
                raise Cancelled()
            if progress is not None and self.produced % 1024 == 0:
                progress(self.produced)
            if not self._advance():
                raise IndexError(index)
        step = self.stages.get(index) or self._recent.get(index)
        assert step is not None
        return step

    def last(
        self,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Run to the end; the number of the last step (-1 if there are none)."""
        with self._locked(cancelled):
            return self._last(cancelled, progress)

    def _last(
        self, cancelled: Callable[[], bool] | None, progress: Callable[[int], None] | None
    ) -> int:
        while self.total is None:
            if cancelled is not None and self.produced % 256 == 0 and cancelled():
                raise Cancelled()
            if progress is not None and self.produced % 1024 == 0:
                progress(self.produced)
            self._advance()
        return self.total - 1

    def next_stage(
        self,
        after: int,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int | None:
        """The number of the first stage after step ``after``: the end of the current loop."""
        with self._locked(cancelled):
            return self._next_stage(after, cancelled, progress)

    def _next_stage(
        self,
        after: int,
        cancelled: Callable[[], bool] | None,
        progress: Callable[[int], None] | None,
    ) -> int | None:
        for number in self.stage_numbers:
            if number > after:
                return number
        if self.produced <= after:
            self._get(after, cancelled, progress)
        while self.total is None:
            if cancelled is not None and self.produced % 256 == 0 and cancelled():
                raise Cancelled()
            if progress is not None and self.produced % 1024 == 0:
                progress(self.produced)
            number = self.produced
            if self._advance() and number in self.stages:
                return number
        return None

    def find_stage(
        self,
        name: str,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int | None:
        """The step number of stage ``name``, running the variant until it appears."""
        with self._locked(cancelled):
            return self._find_stage(name, cancelled, progress)

    def _find_stage(
        self,
        name: str,
        cancelled: Callable[[], bool] | None,
        progress: Callable[[int], None] | None,
    ) -> int | None:
        number = self.stage_number(name)
        while number is None and self.total is None:
            if cancelled is not None and self.produced % 256 == 0 and cancelled():
                raise Cancelled()
            if progress is not None and self.produced % 1024 == 0:
                progress(self.produced)
            produced = self.produced
            if self._advance() and produced in self.stages and self.stages[produced].name == name:
                number = produced
        return number

    def prefetch(self, index: int) -> None:
        """Compute step ``index`` ahead of time (from a worker thread); never raises."""
        if self.known(index) or (self.total is not None and index >= self.total):
            return
        if not self.lock.acquire(blocking=False):
            return  # something else is running the variant
        self._interrupt.clear()
        try:
            if index == self.produced and not self._stale:  # the next step only: never replay
                self._get(index, None, None)
        except (IndexError, Cancelled, TracerError):
            pass
        finally:
            self.lock.release()

    def close(self) -> None:
        """Stop the variant for good (its worker process, if it has one); for whoever owns
        the stepper, when nothing will be asked of it again."""
        self._interrupt.set()  # a prefetch computing now gives up
        self.trace.close()

    # Internals -------------------------------------------------------------------

    @contextmanager
    def _locked(self, cancelled: Callable[[], bool] | None) -> Iterator[None]:
        """Hold the lock, giving up if ``cancelled`` says so while another caller has it."""
        while not self.lock.acquire(timeout=LOCK_POLL_S):
            if cancelled is not None and cancelled():
                # Whoever holds the lock (a prefetch) is computing what this caller gave up
                # waiting for: stop it too, so a variant in a worker process stops at once.
                self._interrupt.set()
                raise Cancelled()
        try:
            self._interrupt.clear()
            self._should_stop = cancelled
            yield
        finally:
            self._should_stop = None
            self.lock.release()

    def _stop_requested(self) -> bool:
        """What a trace in a worker process polls mid-step: stop for the caller, or for Esc."""
        caller = self._should_stop
        return self._interrupt.is_set() or (caller is not None and caller())

    def _revive(self) -> None:
        """Run a fresh trace up to where the stopped one was."""
        target = self.produced
        self._stale = False
        self._restart()
        while self.produced < target and self._advance():
            pass

    def _restart(self) -> None:
        # The old run's worker process is stopped now, not whenever the collector finds it.
        self.trace.close()
        self.trace = self._factory()
        self.trace.should_stop = self._stop_requested
        self._stale = False
        self.produced = 0
        self._recent.clear()
        self.replays += 1

    def _advance(self) -> bool:
        """Take one step from the trace; False at its end (or when it failed)."""
        if self._stale:
            self._revive()
        if self.total is not None and self.produced >= self.total:
            return False
        try:
            step = next(self.trace)
        except Cancelled:
            self._stale = True  # stopped mid-step: the next request starts a fresh run
            raise
        except StopIteration:
            self.total = self.produced
            self.padding_note = self.trace.padding_note
            return False
        except TracerError as error:
            self.error = error
            self.total = self.produced
            return False
        except (SystemExit, GeneratorExit) as exit_:
            # A plugin calling sys.exit() must stop its trace, never the program reading it.
            self.error = PluginError(
                f"variant stopped the program ({type(exit_).__name__}: {exit_}); "
                "a variant must yield its stages and return"
            )
            self.total = self.produced
            return False
        number = self.produced
        self.produced += 1
        if isinstance(step, Stage):
            if number not in self.stages:
                self.stages[number] = step
                self.stage_numbers.append(number)
        else:
            self._remember(number, step)
            self._paint(step)
        return True

    def _remember(self, number: int, step: Step) -> None:
        self._recent[number] = step
        while len(self._recent) > self.window:
            self._recent.popitem(last=False)

    def _paint(self, step: SubStep) -> None:
        cell = cell_of(step)
        scalar = scalar_of(step)
        if cell is None or scalar is None:
            return
        canvas = self.canvases.get(step.stage)
        if canvas is None:
            size = max(len(self.tokens), 1)
            rows = 1 if len(step.position) == 1 else size
            canvas = LoopCanvas(step.stage, rows, size, scalar[0])
            self.canvases[step.stage] = canvas
        canvas.record(cell[0], cell[1], step.index, scalar[1])
