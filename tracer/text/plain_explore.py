"""The explorer as text (``attn explore --plain``): every stage in full, a loop's first
sub-steps and a count of the rest."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tracer.errors import EXIT_OK

if TYPE_CHECKING:
    from tracer.tracing.stepper import Stepper

PLAIN_SUBSTEPS = 12
"""Sub-steps of each loop that ``explore --plain`` prints before summing up the rest."""


def explore_plain(variant: str, options: object, plugin_dirs: list[str]) -> int:
    """Every step of the variant as text: stages in full, loops' first sub-steps and a count."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.session.explore import explore_loader

    session = explore_loader(variant, options, plugin_dirs)  # type: ignore[arg-type]
    for warning in session.warnings:
        print(f"attn: warning: {warning}", file=sys.stderr)
    for chunk in plain_steps(session.stepper):
        print(chunk)
    error = session.stepper.error
    if error is not None:
        print(f"attn: {error}", file=sys.stderr)
        return error.exit_status
    return EXIT_OK


def plain_steps(stepper: Stepper) -> Iterator[str]:
    """The text of each stage, and of a loop's first sub-steps, in the order they ran."""
    # Here, not at the top: Textual and the lesson modules load only for this command.
    from tracer.render.text import format_number, format_stage, shape_text, source_line
    from tracer.tui.equation_text import equation_text
    from tracer.variant import Stage

    trace = stepper.trace
    variant = trace.variant
    yield f"{variant.name}: {variant.title}\ntokens: {' '.join(trace.tokens)}{source_line(trace)}\n"
    shown_in_loop = 0
    skipped = 0
    index = 0
    while True:
        try:
            step = stepper.get(index)
        except IndexError:
            break
        index += 1
        if isinstance(step, Stage):
            if skipped:
                yield f"   … and {skipped:,} more sub-steps of this loop\n"
            shown_in_loop = skipped = 0
            yield format_stage(step, stepper.trace, len(variant.stages)) + "\n"
            continue
        if shown_in_loop >= PLAIN_SUBSTEPS:
            skipped += 1
            continue
        shown_in_loop += 1
        where = ", ".join(str(p) for p in step.position)
        lines = [f"-- {step.stage} loop, sub-step {step.index + 1} at ({where})"]
        if step.formula:
            lines.append(f"   {step.formula}")
        equation = equation_text(step)
        if equation is not None:
            lines.extend(f"   {line}" for line in equation.plain.splitlines())
        else:
            for name, tensor in step.tensors.items():
                values = tensor.detach().flatten().tolist()[:8]
                shown = ", ".join(format_number(v) for v in values)
                lines.append(f"   {name} ({shape_text(tensor)}): {shown}")
        yield "\n".join(lines)
    if skipped:
        yield f"   … and {skipped:,} more sub-steps of this loop\n"
