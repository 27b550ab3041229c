"""A running variant: a lazy, ordered stream of stages and loop sub-steps.

Iterating a :class:`Trace` advances the variant's generator one step at a
time. Completed stages are kept (``trace.stages``); sub-steps are handed out
and forgotten, so stepping through 262,144 loop iterations costs memory for
one of them at a time.

Everything a variant yields is checked where it is yielded (see
:mod:`tracer.tracing.checks`), so a plugin's mistake is reported at its own
``file:line`` instead of surfacing later as a traceback in a renderer.
"""

from __future__ import annotations

import inspect
import os
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from types import FrameType, GeneratorType
from typing import TYPE_CHECKING

from tracer.errors import Location, TracerError, UsageError, VariantRunError
from tracer.sanitize import clip
from tracer.tracing.containment import PluginExit, contained
from tracer.tracing.lines import LineRecorder, resolve_records, statement_lines
from tracer.variant import (
    RunContext,
    Stage,
    Step,
    SubStep,
    Tokens,
    Variant,
    given_padding,
    padding_reads,
)

SHARED_HELPER = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dropout.py"
)
"""``tracer/dropout.py``, which plugins call as their own helper (found without importing it)."""


def _is_shared_helper(filename: str) -> bool:
    return os.path.normcase(os.path.abspath(filename)) == os.path.normcase(SHARED_HELPER)


if TYPE_CHECKING:
    import torch

__all__ = ["PaddingIgnored", "Trace", "VariantRunError"]


class PaddingIgnored(UserWarning):
    """The inputs mark tokens as padding and the variant never read ``run.padding``, so the
    padding was not used (``attn`` prints it as one warning line; its status is unchanged)."""


PADDING_LISTED = 3
"""Padded tokens named in the warning; the rest are counted."""


MAX_SUBSTEPS_PER_LOOP = 16_384
"""The most sub-steps one loop may make (128 tokens' every pair, a few seconds traced): a loop
over 10,000 tokens' pairs would run for hours, so it is refused as it passes this instead."""

_REAL_EXIT = os._exit  # taken at import: a plugin's step may have replaced os._exit


class Trace:
    """Step through one run of a variant: ``for step in trace: ...``.

    ``roots`` are the plugin's files and folders: lines are recorded in every
    file under them (the plugin's own file when not given).
    """

    def __init__(
        self,
        variant: Variant,
        context: RunContext,
        plugin: str = "",
        roots: Sequence[str] = (),
    ) -> None:
        self.variant = variant
        self.context = context
        self.plugin = plugin
        self.source_file = inspect.getsourcefile(variant.run) or variant.run.__code__.co_filename
        """The file that defines the variant's ``run`` function."""
        self.stages: list[Stage] = []
        self.substeps: list[SubStep] = []
        """Sub-steps kept by ``run_to_end(keep_substeps=True)``; empty otherwise."""
        self.kept_substeps = False
        self.output: torch.Tensor | None = None
        self.finished = False
        self.substeps_in_current_loop = 0
        self.torch_changes: list[str] = []
        """torch settings the variant changed and the tracer put back (for a warning)."""
        self.should_stop: Callable[[], bool] | None = None
        """Polled while a step computes where the step can be abandoned (a worker process)."""
        self._loop_lines: dict[str, set[int]] = {}
        """Lines run by the sub-steps since the last stage: the loop that built the next stage."""
        self._generator: GeneratorType[Step, None, torch.Tensor] | None = None
        self._code_file = variant.run.__code__.co_filename
        # The public dropout helper's lines are shown with the plugin's, as a helper of its
        # own would be: the source pane shows the mask being drawn when --dropout is set.
        self._lines = LineRecorder((*(tuple(roots) or (self._code_file,)), SHARED_HELPER))
        self._lines.watch = getattr(variant.run, "__code__", None)
        self._guard: object | None = None
        self._pid = os.getpid()
        self.read_padding: bool | None = None
        """Whether the variant read ``run.padding`` (known once the run has ended)."""
        self.report_padding = True
        """Whether an ended run given padding it never read warns (:class:`PaddingIgnored`);
        a worker process leaves that to the tool, which it tells with its last message."""
        self._reads_before = 0

    @property
    def tokens(self) -> tuple[str, ...]:
        """The tokens (a :class:`~tracer.variant.Tokens`: ``.source`` holds a second sequence's)."""
        source = self.context.source
        return Tokens(self.context.tokens, source.tokens if source is not None else None)

    def __iter__(self) -> Iterator[Step]:
        return self

    def __next__(self) -> Step:
        if self.finished:
            raise StopIteration
        from tracer.tracing.guard import CopyOnWrite  # imports torch: on the first step

        if self._guard is None:
            self._guard = CopyOnWrite()
        guard = self._guard
        assert isinstance(guard, CopyOnWrite)
        try:
            try:
                with contained(self.torch_changes), self._lines, guard:
                    if self._generator is None:
                        self._generator = self._start()
                    step = next(self._generator)
            finally:
                if os.getpid() != self._pid:  # a copy of this process the step forked ends here
                    _REAL_EXIT(0)
            # Checked and recorded outside the guard: our own torch calls are not the plugin's.
            return self._record(step)
        except StopIteration as stop:
            self.finished = True
            self._finish(stop.value)
            self.read_padding = padding_reads(self.context) > self._reads_before
            self._warn_unused_padding()
            raise
        except TracerError:
            # Already a one-line, user-facing error (e.g. a variant rejecting its options).
            self.finished = True
            raise
        except KeyboardInterrupt:  # Ctrl+C (or a plugin raising it): the command says so and ends
            self.finished = True
            raise
        except (Exception, SystemExit, GeneratorExit, PluginExit, BaseException) as exc:
            self.finished = True  # any BaseException of a plugin's own is its failure, one line
            raise self._failure(exc) from exc

    def close(self) -> None:
        """Give up on the rest of the run: the trace ends here (a worker's process stops)."""
        self.finished = True
        # Dropped, not closed here: closing runs the plugin's own cleanup (its ``finally``)
        # outside the tracer's guards; a dropped generator is left to the collector, as an
        # abandoned trace's always was.
        self._generator = None

    def run_to_end(self, keep_substeps: bool = False) -> Trace:
        """Run the rest of the variant, keeping stages and discarding sub-steps.

        With ``keep_substeps`` the sub-steps are kept too, in ``self.substeps`` (for
        tests: a long loop holds every iteration in memory).
        """
        self.kept_substeps = self.kept_substeps or keep_substeps
        for step in self:
            if keep_substeps and isinstance(step, SubStep):
                self.substeps.append(step)
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

    @property
    def padding_note(self) -> str | None:
        """One line saying that the given padding was not used, when the run has ended and
        its variant never read ``run.padding`` though the inputs mark tokens as padding."""
        padding = given_padding(self.context)
        if self.read_padding is not False or not padding or not any(padding):
            return None
        padded = [index for index, flag in enumerate(padding) if flag]
        labels = self.context.tokens
        named = [
            f"{index} ({clip(str(labels[index]), 20)!r})" if index < len(labels) else str(index)
            for index in padded[:PADDING_LISTED]
        ]
        more = len(padded) - len(named)
        which = ", ".join(named) + (f" and {more} more" if more > 0 else "")
        noun = "token" if len(padded) == 1 else "tokens"
        return (
            f"the inputs mark {noun} {which} as padding, but variant '{self.variant.name}' "
            "never read run.padding, so the padding was not used in this run"
        )

    def _warn_unused_padding(self) -> None:
        note = self.padding_note
        if note is None or not self.report_padding:
            return
        where = self.variant.declared_at
        # warn_explicit with no registry: said once per trace that ignored its padding, not
        # once per process (the command line keeps each line once).
        warnings.warn_explicit(
            note,
            PaddingIgnored,
            where.path if where is not None else self.source_file,
            (where.line or 0) if where is not None else 0,
            registry=None,
        )

    def _start(self) -> GeneratorType[Step, None, torch.Tensor]:
        from tracer.options import check_sized_bounds

        check_sized_bounds(self.variant, self.context)
        self._reads_before = padding_reads(self.context)
        records = getattr(self.variant, "records", ())
        if records:  # a library's files the variant runs: recorded like its own
            named = records() if callable(records) else records
            self._lines.add_roots(resolve_records(named), library=True)
        generator = self.variant.run(self.context)
        if not isinstance(generator, GeneratorType):
            raise self._error("its run function must be a generator that yields stage(...) steps")
        return generator

    def _yielding_frame(self) -> FrameType | None:
        """The frame that executed the ``yield``: inside helpers reached by ``yield from``."""
        generator: object = self._generator
        frame = None
        while isinstance(generator, GeneratorType):
            frame = generator.gi_frame or frame
            generator = generator.gi_yieldfrom
        return frame

    def _record(self, step: object) -> Step:
        from tracer.tracing.checks import check_step  # imports torch: on the first step

        frame = self._yielding_frame()
        where = (
            Location(frame.f_code.co_filename, frame.f_lineno)
            if frame is not None
            else Location(self.source_file)
        )
        if not isinstance(step, (Stage, SubStep)):
            raise self._error(
                f"yielded {type(step).__name__}; expected stage(...) or substep(...)", where
            )
        check_step(self, step, where)
        lines = self._lines.take()
        if frame is not None:  # the yield statement itself is bookkeeping, not computation
            lines.get(frame.f_code.co_filename, set()).difference_update(
                statement_lines(frame.f_code.co_filename, frame.f_lineno)
            )
        primary = where.path
        if isinstance(step, SubStep):
            if self.substeps_in_current_loop >= MAX_SUBSTEPS_PER_LOOP:
                raise self._too_long_loop(step)
            self._set_lines(step, lines, primary)
            step.index = self.substeps_in_current_loop
            self.substeps_in_current_loop += 1
            for path, numbers in lines.items():
                self._loop_lines.setdefault(path, set()).update(numbers)
            self._protect(step)
            return step
        # A stage built by a loop was computed by every line its sub-steps ran, too.
        for path, numbers in self._loop_lines.items():
            lines.setdefault(path, set()).update(numbers)
        self._loop_lines = {}
        self._set_lines(step, lines, primary)
        step.index = len(self.stages)
        self.stages.append(step)
        self.substeps_in_current_loop = 0
        self._protect(step)
        return step

    def _too_long_loop(self, step: SubStep) -> UsageError:
        tokens = len(self.context.tokens)
        advice = (
            "give fewer tokens"
            if self.context.query is not None
            else "give fewer tokens, or follow one query (--query, a lesson's query:)"
        )
        return UsageError(
            f"variant '{self.variant.name}' has made {MAX_SUBSTEPS_PER_LOOP:,} sub-steps in its "
            f"loop for stage '{step.stage}' with {tokens:,} tokens, the most one loop may make; "
            f"{advice}"
        )

    @staticmethod
    def _set_lines(step: Step, lines: dict[str, set[int]], primary: str) -> None:
        files = {path: tuple(sorted(numbers)) for path, numbers in lines.items() if numbers}
        step.source_file = primary
        step.lines = files.get(primary, ())
        step.files = {primary: step.lines} | {
            p: n for p, n in sorted(files.items()) if p != primary
        }

    def _protect(self, step: Step) -> None:
        from tracer.tracing.guard import CopyOnWrite  # imports torch (see __next__)

        if isinstance(self._guard, CopyOnWrite):
            self._guard.protect(step)

    def _finish(self, output: object) -> None:
        import torch  # loaded by now; this module is imported before torch is

        if not isinstance(output, torch.Tensor):
            line = self._lines.returned
            raise self._error(
                f"returned {type(output).__name__}; it must return the output tensor",
                Location(self._code_file, line) if line is not None else None,
            )
        yielded = {stage.name for stage in self.stages}
        skipped = [
            name
            for name in self.variant.stages
            if name not in yielded and name not in self.variant.optional_stages
        ]
        if skipped:
            # Reported where the stages were declared: that is the line to fix (or to mark
            # the stage optional_stages=).
            raise self._error(
                f"declares stage '{skipped[0]}' in stages= but never yielded it; yield it, "
                "remove it, or list it in optional_stages=",
                self.variant.declared_at,
            )
        self.output = self._recorded_as(output)

    def _recorded_as(self, output: torch.Tensor | None) -> torch.Tensor | None:
        """The stage tensor the variant returned, as recorded: a step holds its own object over
        the variant's memory (see the guard), so the output is found by that memory, newest
        stage first. A tensor changed after it was recorded sits on a copy and is not found."""
        import torch  # loaded by now: the variant ran (not at the top: start-up stays light)

        if output is None or output.layout != torch.strided:
            return output
        for stage in reversed(self.stages):
            for tensor in stage.tensors.values():
                if (
                    getattr(tensor, "layout", None) == output.layout
                    and tensor.data_ptr() == output.data_ptr()
                    and tensor.shape == output.shape
                    and tensor.stride() == output.stride()
                    and tensor.dtype == output.dtype
                ):
                    return tensor
        return output

    def _error(self, message: str, where: Location | None = None) -> VariantRunError:
        return VariantRunError(
            f"variant '{self.variant.name}' {message}", where or Location(self.source_file)
        )

    def _failure(self, exc: BaseException) -> VariantRunError:
        """Point at the deepest line of the plugin's own files in the traceback."""
        location = Location(self.source_file)
        for frame in traceback.extract_tb(exc.__traceback__):
            if self._lines.covers(frame.filename) and not _is_shared_helper(frame.filename):
                location = Location(frame.filename, frame.lineno)  # the plugin's own line
        if isinstance(exc, SystemExit):
            summary = f"called sys.exit({exc.code!r})"
        elif isinstance(exc, GeneratorExit):
            summary = "raised GeneratorExit"
        elif type(exc).__name__ in ("PluginExit", "UnknownOption"):
            summary = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}".strip().splitlines()
            summary = text[0] if text else type(exc).__name__
        return VariantRunError(f"variant '{self.variant.name}' failed: {summary}", location)
