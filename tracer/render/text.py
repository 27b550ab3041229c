"""Plain-text and JSON renderings of a trace: what ``attn trace`` prints.

Plain text is for terminals, pipes and screen readers: no colour, no box
drawing, one tensor row per line, 4 decimals.
"""

from __future__ import annotations

import itertools
import linecache
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.render.labels import axis_labels
from tracer.variant import Stage

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


def format_tensor(tensor: torch.Tensor, tokens: tuple[str, ...], query: int | None = None) -> str:
    """A labelled table of a 0-, 1- or 2-d tensor; higher ranks print one 2-d slice per index."""
    data = tensor.detach().cpu()
    if data.dim() > 2:
        return "\n".join(
            f"[{index}]\n{format_tensor(data[index], tokens, query)}"
            for index in range(data.shape[0])
        )
    labels = axis_labels(tuple(data.shape), tokens, query)
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


def shape_text(tensor: torch.Tensor) -> str:
    return "×".join(str(n) for n in tensor.shape) or "scalar"


def source_lines(stage: Stage) -> list[str]:
    """The plugin lines that computed a stage, as ``file:line  code``."""
    if not stage.source_file:
        return []
    name = Path(stage.source_file).name
    return [
        f"{name}:{line}  {linecache.getline(stage.source_file, line).strip()}"
        for line in stage.lines
    ]


def format_stage(stage: Stage, trace: Trace, total: int | None = None) -> str:
    query = trace.context.query
    count = f"/{total}" if total else ""
    out = [f"== stage {stage.index + 1}{count}: {stage.name} - {stage.title}"]
    if stage.formula:
        out.append(f"   {stage.formula}")
    out.extend(f"   {line}" for line in source_lines(stage))
    for name, tensor in stage.tensors.items():
        out.append("")
        out.append(f"{name} ({shape_text(tensor)})")
        out.append(format_tensor(tensor, trace.tokens, query))
    return "\n".join(out)


def format_trace(trace: Trace) -> Iterable[str]:
    """Run the trace to the end, yielding each stage's text as soon as it is computed."""
    from tracer.variant import Stage as StageType

    total = len(trace.variant.stages)
    variant = trace.variant
    focus = ""
    if trace.context.query is not None:
        focus = f", query {trace.context.query} ({trace.tokens[trace.context.query]})"
    # Run to the first step before printing anything: a variant that rejects its
    # options fails here, and the user sees only the error line.
    first = next(trace, None)
    yield f"{variant.name}: {variant.title}\ntokens: {' '.join(trace.tokens)}{focus}\n"
    for step in itertools.chain([first] if first is not None else [], trace):
        if isinstance(step, StageType):
            yield format_stage(step, trace, total) + "\n"
    if trace.output is not None:
        yield (
            "output ("
            + shape_text(trace.output)
            + ")\n"
            + format_tensor(trace.output, trace.tokens, trace.context.query)
        )


def plain(value: Any) -> Any:
    """Nested lists of floats, with non-finite values as the strings "inf", "-inf", "nan"."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return format_number(value)
    return value


def tensor_json(tensor: torch.Tensor) -> Any:
    return plain(tensor.detach().cpu().tolist())


def trace_json(trace: Trace) -> dict[str, Any]:
    trace.run_to_end()
    return {
        "variant": trace.variant.name,
        "tokens": list(trace.tokens),
        "query": trace.context.query,
        "stages": [
            {
                "name": stage.name,
                "title": stage.title,
                "formula": stage.formula,
                "source": {"file": stage.source_file, "lines": list(stage.lines)},
                "tensors": {name: tensor_json(t) for name, t in stage.tensors.items()},
            }
            for stage in trace.stages
        ],
        "output": tensor_json(trace.output) if trace.output is not None else None,
    }
