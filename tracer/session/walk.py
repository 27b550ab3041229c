"""Walking a lesson's loops: one stepper per loop step and where its sub-steps start.

The session (:mod:`tracer.session.lesson`) owns the loops of the lesson it walks; the
front ends only draw the views it gives them. :func:`warm_up` computes every step's
tensors once in a loading worker, so stepping only draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.lessons.model import (
    Compare,
    Lesson,
    Loop,
    Quiz,
    Show,
)
from tracer.tracing.stepper import Cancelled, Stepper
from tracer.variant import Stage, SubStep

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner


COUNT_STEPS = 2048
"""Loops up to this long are counted while loading ("pair 8 of 36"); longer ones say "of ?"."""
CHEAP_STEPS = 200
"""A loop's end is found without a worker only if it takes at most this many sub-steps."""


# Loops --------------------------------------------------------------------------------


@dataclass
class LoopState:
    """One loop step's stepper and where its sub-steps start in it."""

    stepper: Stepper
    first: int
    limit: int | None
    last: int | None = None
    """Global number of the loop's last sub-step shown, once known."""

    def count_known(self) -> int | None:
        return None if self.last is None else self.last - self.first + 1

    def clamp(self, sub: int) -> int:
        """``sub``, or the loop's last sub-step if ``sub`` lies past a known end."""
        limit = self.count_known()
        return max(limit - 1, 0) if limit is not None and sub >= limit else sub

    def last_sub(self) -> int:
        """The loop's last sub-step (counted from 0) if its end is known, else its first."""
        return self.last - self.first if self.last is not None else 0

    def may_go_on(self, sub: int) -> bool:
        """Whether a sub-step may follow ``sub`` (none does past a known end)."""
        return self.last is None or self.first + sub + 1 <= self.last

    def after(self, sub: int, stage: str) -> str:
        """What follows sub-step ``sub`` of the loop building ``stage``, once it is computed.

        ``"next"``: another sub-step of the loop. ``"failed"``: the variant raised inside
        the loop (``stepper.error``). ``"end"``: the loop is over, and its end is now known.
        """
        target = self.first + sub + 1
        try:
            item = self.stepper.get(target)
        except IndexError:
            item = None
        if isinstance(item, SubStep) and item.stage == stage:
            return "next"
        if self.stepper.error is not None:
            return "failed"
        self.last = target - 1
        return "end"

    def count_within(self, steps: int) -> int | None:
        """Run the loop to its end if that takes at most ``steps`` sub-steps (loading worker)."""
        if self.last is not None or self.limit is not None:
            return self.count_known()
        stepper = self.stepper
        bound = self.first + steps

        def too_long() -> bool:
            return stepper.produced > bound

        try:
            end = stepper.next_stage(self.first, cancelled=too_long)
        except Cancelled:
            return None
        if end is None and stepper.error is not None:
            return None  # the variant failed inside the loop: stepping there reports it
        self.last = (end if end is not None else (stepper.total or self.first + 1)) - 1
        return self.count_known()

    def find_end(self, *, cheap_only: bool) -> int | None:
        """The global number of the loop's last sub-step shown (runs the loop if needed)."""
        if self.last is not None:
            return self.last
        stepper = self.stepper
        if self.limit is not None:
            candidate = self.first + self.limit - 1
            if cheap_only and stepper.cost(candidate) > CHEAP_STEPS:
                return None
            try:
                item = stepper.get(candidate)
            except IndexError:
                item = None
            if isinstance(item, SubStep):
                self.last = candidate
                return candidate
        if cheap_only:
            return None
        end = stepper.next_stage(self.first)
        self.last = (end if end is not None else (stepper.total or self.first + 1)) - 1
        return self.last


def start_loop(runner: LessonRunner, step: Loop) -> LoopState | None:
    """A stepper for a loop step, run up to the loop's first sub-step; None if there is no loop."""
    stepper = Stepper(lambda: runner.start(step.variant, step.options, step.query))
    index = 0
    while True:
        try:
            item = stepper.get(index)
        except IndexError:
            if stepper.error is not None:
                raise stepper.error from None
            return None
        if isinstance(item, SubStep) and item.stage == step.stage:
            break
        if isinstance(item, Stage) and item.name == step.stage:
            return None  # the stage is not built by a loop
        index += 1
    state = LoopState(stepper, index, step.limit)
    if step.limit is not None:
        state.find_end(cheap_only=True)
    return state


def warm_up(
    lesson: Lesson, runner: LessonRunner, *, highlight: Callable[[str], object] | None = None
) -> dict[int, LoopState]:
    """Compute every step's tensors once (a loading worker), so stepping only draws.

    The runner caches its traces, so the main thread later finds them done. A
    step that fails here fails again when shown, where its error is displayed.
    ``highlight``: called once with each source file a show, loop, compare or quiz step shows
    (a viewer prepares it).
    """
    loops: dict[int, LoopState] = {}
    sources: list[str | None] = []
    for number, step in enumerate(lesson.steps):
        try:
            if isinstance(step, Loop):
                state = start_loop(runner, step)
                if state is not None:
                    loops[number] = state
                    state.count_within(COUNT_STEPS)  # "pair 8 of 36" needs the 36
                    # The stage the loop builds names the axes of the matrix it fills.
                    built = runner.trace(step.variant, step.options, step.query).stage(step.stage)
                    sources.append(built.source_file)
                    # Its sub-steps show the file they ran in, which may be a helper's.
                    first = state.stepper.get(state.first)
                    sources.append(getattr(first, "source_file", None))
            elif isinstance(step, Show):
                sources.append(runner.tensor(step.ref).stage.source_file)
            elif isinstance(step, Compare):
                left, right, _difference = runner.compare(step)
                sources += [left.stage.source_file, right.stage.source_file]
            elif isinstance(step, Quiz):
                runner.answer(step)
                # The tables it asks about, with their source (a quiz may be a file's first step).
                for ref in step.tables():
                    sources.append(runner.tensor(ref).stage.source_file)
        except Exception:  # reported when the step is shown
            continue
    if highlight is not None:
        for source in dict.fromkeys(sources):  # each file once, in the lesson's order
            if source:
                try:
                    highlight(source)
                except Exception:  # the pane says what is wrong with the file when shown
                    continue
    return loops
