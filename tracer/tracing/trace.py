"""A running variant: a lazy, ordered stream of stages and loop sub-steps.

Iterating a :class:`Trace` advances the variant's generator one step at a
time. Completed stages are kept (``trace.stages``); sub-steps are handed out
and forgotten, so stepping through 262,144 loop iterations costs memory for
one of them at a time.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Iterator
from types import GeneratorType
from typing import TYPE_CHECKING

from tracer.errors import Location, PluginError, TracerError
from tracer.tracing.lines import LineRecorder, statement_lines
from tracer.variant import RunContext, Stage, Step, SubStep, Variant

if TYPE_CHECKING:
    import torch


class VariantRunError(PluginError):
    """A variant raised, yielded something that is not a step, or returned no tensor."""


class Trace:
    """Step through one run of a variant: ``for step in trace: ...``."""

    def __init__(self, variant: Variant, context: RunContext, plugin: str = "") -> None:
        self.variant = variant
        self.context = context
        self.plugin = plugin
        self.source_file = inspect.getsourcefile(variant.run) or variant.run.__code__.co_filename
        self.stages: list[Stage] = []
        self.output: torch.Tensor | None = None
        self.finished = False
        self.substeps_in_current_loop = 0
        self._loop_lines: set[int] = set()
        """Lines run by the sub-steps since the last stage: the loop that built the next stage."""
        self._generator: GeneratorType[Step, None, torch.Tensor] | None = None
        self._code_file = variant.run.__code__.co_filename
        self._lines = LineRecorder(self._code_file)
        self._guard: object | None = None

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.context.tokens

    def __iter__(self) -> Iterator[Step]:
        return self

    def __next__(self) -> Step:
        if self.finished:
            raise StopIteration
        from tracer.tracing.guard import CopyOnWrite  # imports torch

        if self._guard is None:
            self._guard = CopyOnWrite()
        guard = self._guard
        assert isinstance(guard, CopyOnWrite)
        try:
            with self._lines, guard:
                if self._generator is None:
                    self._generator = self._start()
                step = next(self._generator)
        except StopIteration as stop:
            self.finished = True
            self._finish(stop.value)
            raise
        except TracerError:
            # Already a one-line, user-facing error (e.g. a variant rejecting its options).
            self.finished = True
            raise
        except Exception as exc:
            self.finished = True
            raise self._failure(exc) from exc
        return self._record(step)

    def run_to_end(self) -> Trace:
        """Run the rest of the variant, keeping stages and discarding sub-steps."""
        for _ in self:
            pass
        return self

    def stage(self, name: str) -> Stage:
        """A completed stage by name (runs the variant as far as needed)."""
        for existing in self.stages:
            if existing.name == name:
                return existing
        for step in self:
            if isinstance(step, Stage) and step.name == name:
                return step
        raise KeyError(f"variant '{self.variant.name}' produced no stage '{name}'")

    def _start(self) -> GeneratorType[Step, None, torch.Tensor]:
        generator = self.variant.run(self.context)
        if not isinstance(generator, GeneratorType):
            raise self._error("its run function must be a generator that yields stage(...) steps")
        return generator

    def _record(self, step: object) -> Step:
        if not isinstance(step, (Stage, SubStep)):
            self.finished = True
            raise self._error(f"yielded {type(step).__name__}; expected stage(...) or substep(...)")
        lines = self._lines.take()
        frame = self._generator.gi_frame if self._generator is not None else None
        if frame is not None:  # the yield statement itself is bookkeeping, not computation
            lines.difference_update(statement_lines(self._code_file, frame.f_lineno))
        step.source_file = self.source_file
        if isinstance(step, SubStep):
            step.lines = tuple(sorted(lines))
            step.index = self.substeps_in_current_loop
            self.substeps_in_current_loop += 1
            self._loop_lines |= lines
            return step
        # A stage built by a loop was computed by every line its sub-steps ran, too.
        step.lines = tuple(sorted(lines | self._loop_lines))
        self._loop_lines = set()
        if step.name not in self.variant.stages:
            self.finished = True
            raise self._error(
                f"yielded stage '{step.name}', which it does not declare in stages="
                f"{list(self.variant.stages)}"
            )
        step.index = len(self.stages)
        self.stages.append(step)
        self.substeps_in_current_loop = 0
        from tracer.tracing.guard import CopyOnWrite

        if isinstance(self._guard, CopyOnWrite):
            self._guard.protect(step)
        return step

    def _finish(self, output: object) -> None:
        import torch

        if not isinstance(output, torch.Tensor):
            raise self._error(f"returned {type(output).__name__}; it must return the output tensor")
        self.output = output

    def _error(self, message: str) -> VariantRunError:
        return VariantRunError(
            f"variant '{self.variant.name}' {message}", Location(self.source_file)
        )

    def _failure(self, exc: BaseException) -> VariantRunError:
        """Point at the deepest line of the plugin's own file in the traceback."""
        location = Location(self.source_file)
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == self._code_file:
                location = Location(self.source_file, frame.lineno)
        summary = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
        return VariantRunError(f"variant '{self.variant.name}' failed: {summary}", location)

    def _repr_html_(self) -> str:
        """Jupyter's view of a trace: its stages as token-labelled heatmaps (tracer.notebook)."""
        from tracer.notebook import trace_html

        return trace_html(self)
