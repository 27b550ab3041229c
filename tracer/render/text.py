"""Plain-text and JSON renderings of a trace: what ``attn trace`` prints.

Plain text is for terminals, pipes and screen readers: no colour, no box
drawing, one tensor row per line, 4 decimals.
"""

from __future__ import annotations

import itertools
import linecache
import math
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.render.labels import axes_hint, axis_labels, effective_axes, label_axes
from tracer.variant import Stage, SubStep, parse_axis

if TYPE_CHECKING:
    import torch

    from tracer.tracing import Trace


def format_number(value: float | bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text


def format_tensor(
    tensor: torch.Tensor,
    tokens: tuple[str, ...],
    query: int | None = None,
    axes: Sequence[str] | None = None,
) -> str:
    """A labelled table of a 0-, 1- or 2-d tensor; higher ranks print one 2-d slice per index."""
    data = tensor.detach().cpu()
    if data.dim() > 2:
        names = effective_axes(tuple(data.shape), axes, query)
        leading = label_axes(tuple(data.shape), names, tokens)[0]
        inner = names[1:] if names is not None else None
        title = f"{leading.name} " if leading.name and not leading.tokens else ""
        return "\n".join(
            f"[{title}{label}]\n{format_tensor(data[index], tokens, None, inner)}"
            for index, label in enumerate(leading.labels)
        )
    labels = axis_labels(tuple(data.shape), tokens, query, axes)
    values = data.reshape(len(labels.rows), len(labels.columns)).tolist()
    cells = [[format_number(v) for v in row] for row in values]
    width = max([len(c) for row in cells for c in row] + [len(c) for c in labels.columns])
    label_width = max(len(r) for r in labels.rows)
    lines = []
    if data.dim() > 0:
        header = " " * label_width + "  " + "  ".join(c.rjust(width) for c in labels.columns)
        lines.append(header.rstrip())
    for label, row in zip(labels.rows, cells, strict=True):
        lines.append(
            (label.ljust(label_width) + "  " + "  ".join(c.rjust(width) for c in row)).rstrip()
        )
    return "\n".join(line if line.strip() else line.strip() for line in lines).strip("\n")


def shape_text(
    tensor: torch.Tensor, axes: Sequence[str] | None = None, query: int | None = None
) -> str:
    """``6×3`` or, with named axes, ``6×3: token × feature``."""
    shape = "×".join(str(n) for n in tensor.shape) or "scalar"
    names = effective_axes(tuple(tensor.shape), axes, query)
    if names:
        return f"{shape}: {' × '.join(parse_axis(a)[0] for a in names)}"
    return shape


def source_lines(step: Stage | SubStep) -> list[str]:
    """The plugin lines that computed a step, as ``file:line  code``, every file that ran."""
    files = step.files or ({step.source_file: step.lines} if step.source_file else {})
    return [
        f"{Path(path).name}:{line}  {linecache.getline(path, line).strip()}"
        for path, lines in files.items()
        for line in lines
    ]


def format_tensors(step: Stage | SubStep, tokens: tuple[str, ...], query: int | None) -> list[str]:
    out = []
    for name, tensor in step.tensors.items():
        axes = step.axes.get(name)
        out.append("")
        out.append(f"{name} ({shape_text(tensor, axes, query)})")
        out.append(format_tensor(tensor, tokens, query, axes))
        hint = axes_hint(name, step.guessed_axes)
        if hint:
            out.append(hint)
    return out


def format_substep(step: SubStep, trace: Trace) -> str:
    position = ", ".join(str(p) for p in step.position)
    out = [f"-- {step.stage} [{position}] (sub-step {step.index + 1})"]
    if step.formula:
        out.append(f"   {step.formula}")
    out.extend(f"   {line}" for line in source_lines(step))
    out.extend(format_tensors(step, trace.tokens, trace.context.query))
    return "\n".join(out)


def format_stage(stage: Stage, trace: Trace, total: int | None = None) -> str:
    query = trace.context.query
    count = f"/{total}" if total else ""
    out = [f"== stage {stage.index + 1}{count}: {stage.name} - {stage.title}"]
    if stage.formula:
        out.append(f"   {stage.formula}")
    out.extend(f"   {line}" for line in source_lines(stage))
    out.extend(format_tensors(stage, trace.tokens, query))
    return "\n".join(out)


def format_trace(
    trace: Trace, stages: Collection[str] | None = None, substeps: bool = False
) -> Iterable[str]:
    """Run the trace to the end, yielding each step's text as soon as it is computed.

    ``stages`` limits the output to those stages (and their sub-steps); sub-steps are
    printed only when ``substeps`` is true.
    """
    from tracer.variant import Stage as StageType

    total = len(trace.variant.stages)
    variant = trace.variant
    focus = ""
    if trace.context.query is not None:
        focus = f", query {trace.context.query} ({trace.tokens[trace.context.query]})"
    # Run to the first step before printing anything: a variant that rejects its
    # options fails here, and the user sees only the error line.
    first = next(trace, None)
    source = trace.context.source
    second = f"\nsource: {' '.join(source.tokens)}" if source is not None else ""
    yield f"{variant.name}: {variant.title}\ntokens: {' '.join(trace.tokens)}{focus}{second}\n"
    for step in itertools.chain([first] if first is not None else [], trace):
        if isinstance(step, StageType):
            if stages is None or step.name in stages:
                yield format_stage(step, trace, total) + "\n"
        elif substeps and (stages is None or step.stage in stages):
            yield format_substep(step, trace) + "\n"
    if trace.output is not None and stages is None:
        axes = output_axes(trace)
        query = trace.context.query
        yield (
            f"output ({shape_text(trace.output, axes, query)})\n"
            + format_tensor(trace.output, trace.tokens, query, axes)
        )


def output_axes(trace: Trace) -> tuple[str, ...] | None:
    """The output's axes: those of the stage tensor it is (the variant returned it as yielded)."""
    for stage in reversed(trace.stages):
        for name, tensor in stage.tensors.items():
            if tensor is trace.output and name in stage.axes:
                return stage.axes[name]
    return None


def plain(value: Any) -> Any:
    """Nested lists of floats, with non-finite values as the strings "inf", "-inf", "nan"."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return format_number(value)
    return value


def tensor_json(tensor: torch.Tensor) -> Any:
    return plain(tensor.detach().cpu().tolist())


def step_json(step: Stage | SubStep, query: int | None) -> dict[str, Any]:
    """What a stage or sub-step records: tensors with their shapes and axis names, and source."""
    document: dict[str, Any] = {}
    if isinstance(step, SubStep):
        document["stage"] = step.stage
        document["position"] = list(step.position)
        document["index"] = step.index
    else:
        document["name"] = step.name
        document["title"] = step.title
    document["formula"] = step.formula
    document["source"] = {
        "file": step.source_file,
        "lines": list(step.lines),
        "files": {path: list(lines) for path, lines in step.files.items()},
    }
    document["axes"] = {
        name: list(effective_axes(tuple(t.shape), step.axes.get(name), query) or ())
        for name, t in step.tensors.items()
    }
    document["tensors"] = {name: tensor_json(t) for name, t in step.tensors.items()}
    return document


def trace_json(
    trace: Trace, stages: Collection[str] | None = None, substeps: bool = False
) -> dict[str, Any]:
    """One JSON document: the run's stages (and sub-steps when asked), then its output."""
    query = trace.context.query
    kept: list[dict[str, Any]] = []
    loops: list[dict[str, Any]] = []
    for step in trace:
        if isinstance(step, SubStep):
            if substeps and (stages is None or step.stage in stages):
                loops.append(step_json(step, query))
        elif stages is None or step.name in stages:
            kept.append(step_json(step, query))
    document: dict[str, Any] = {
        "variant": trace.variant.name,
        "tokens": list(trace.tokens),
        "query": query,
        "options": {k: v for k, v in trace.context.options.items() if _is_json(v)},
        "stages": kept,
    }
    if trace.context.source is not None:
        document["source_tokens"] = list(trace.context.source.tokens)
    if substeps:
        document["substeps"] = loops
    document["output"] = tensor_json(trace.output) if trace.output is not None else None
    return document


def _is_json(value: object) -> bool:
    return isinstance(value, (int, float, str, bool)) or value is None
