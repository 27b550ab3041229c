"""Stages and traces as HTML, for Jupyter: ``from tracer import trace; trace("masked")``.

Every table is a heatmap of the numbers that ran, labelled with the tokens
only along the axes the variant named as token axes (see
``tracer.render.labels``), next to the plugin lines that computed it. The
HTML carries its CSS in ``style`` attributes: no stylesheet, no script and
nothing fetched from elsewhere, so it shows the same in a notebook, in an
exported HTML file and offline. Everything the plugin or the user wrote
(names, tokens, source) is HTML-escaped.

Importing this module gives :class:`~tracer.variant.Stage` and
:class:`~tracer.tracing.Trace` their Jupyter view (``_repr_html_``): the
display registers itself here, so neither class imports a front end.
``from tracer import trace`` imports it.
"""

from __future__ import annotations

import linecache
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.inputs.input_set import inputs_from_data
from tracer.plugin_host import PluginHost
from tracer.render.labels import Axis, distinct_tokens, label_axes
from tracer.render.text import format_number, is_whole
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import Stage

if TYPE_CHECKING:
    import torch

MAX_ROWS = 64
"""Rows of one table shown; the rest are counted, never silently dropped."""
MAX_COLUMNS = 32
MAX_SLICES = 8
"""2-d slices shown of a tensor of rank 3 or more."""

BOX = "font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; margin: 6px 0"
CELL = "padding: 2px 6px; text-align: right; border: 1px solid #ddd"
HEAD = "padding: 2px 6px; font-weight: bold; color: #444; background: #f4f4f4"
CODE = "margin: 4px 0; padding: 6px; background: #f7f7f7; border-left: 3px solid #e0a030"
NOTE = "color: #666; font-style: italic"


def cell_colour(value: float, scale: float) -> tuple[str, str]:
    """Background and text colour: blue for positive, red for negative, grey when not finite."""
    if not math.isfinite(value):
        return "#d9d9d9", "#333"
    strength = min(1.0, abs(value) / scale) if scale > 0 else 0.0
    base = (33, 102, 172) if value >= 0 else (178, 24, 43)
    red, green, blue = (round(255 + (c - 255) * strength) for c in base)
    return f"rgb({red}, {green}, {blue})", "#fff" if strength > 0.55 else "#000"


def _scale(values: Iterable[float]) -> float:
    finite = [abs(v) for v in values if math.isfinite(v)]
    return max(finite, default=0.0)


def _flatten(nested: Any) -> list[float]:
    if isinstance(nested, list):
        return [v for item in nested for v in _flatten(item)]
    return [float(nested)]


def _table(
    rows: list[list[float | bool]], row_axis: Axis | None, column_axis: Axis, whole: bool = False
) -> str:
    scale = _scale(float(v) for row in rows for v in row)
    shown_rows, shown_columns = rows[:MAX_ROWS], min(len(column_axis.labels), MAX_COLUMNS)
    names = [axis.name for axis in (row_axis, column_axis) if axis is not None and axis.name]
    corner = escape(" \\ ".join(names))
    head = "".join(
        f'<th style="{HEAD}">{escape(label)}</th>' for label in column_axis.labels[:shown_columns]
    )
    lines = [f'<tr><th style="{HEAD}">{corner}</th>{head}</tr>']
    for index, row in enumerate(shown_rows):
        label = row_axis.labels[index] if row_axis else ""
        cells = []
        for value in row[:shown_columns]:
            background, colour = cell_colour(float(value), scale)
            cells.append(
                f'<td style="{CELL}; background: {background}; color: {colour}">'
                f"{escape(format_number(value, whole))}</td>"
            )
        lines.append(f'<tr><th style="{HEAD}">{escape(label)}</th>{"".join(cells)}</tr>')
    table = f'<table style="border-collapse: collapse; margin: 4px 0">{"".join(lines)}</table>'
    hidden = []
    if len(rows) > len(shown_rows):
        hidden.append(f"{len(rows) - len(shown_rows)} more rows")
    if len(column_axis.labels) > shown_columns:
        hidden.append(f"{len(column_axis.labels) - shown_columns} more columns")
    if hidden:
        table += f'<div style="{NOTE}">not shown: {escape(", ".join(hidden))}</div>'
    return table


def tensor_html(
    name: str,
    tensor: torch.Tensor,
    axes: Sequence[str] | None = None,
    tokens: Sequence[str] = (),
    query: int | None = None,
) -> str:
    """One tensor as a labelled heatmap; rank 3 and up as one table per leading index."""
    data = tensor.detach().cpu()
    shape = tuple(int(n) for n in data.shape)
    named = label_axes(shape, axes, tokens, query)
    described = " × ".join(axis.name for axis in named if axis.name)
    title = f"{name} · {'×'.join(map(str, shape)) or 'scalar'}"
    if described:
        title += f" · {described}"
    parts = [f'<div style="font-weight: bold; margin-top: 6px">{escape(title)}</div>']
    whole = is_whole(data)  # 742, not 742.0000: as the app and the text tables print it
    if len(shape) == 0:
        parts.append(_table([[data.item()]], None, Axis("", ("",)), whole))
    elif len(shape) == 1:
        # One focused query's row of keys is that query's row (as tracer.render.labels has it).
        row_axis = None
        if named[0].name == "key" and query is not None and query < len(tokens):
            row_axis = Axis("query", (distinct_tokens(tokens)[query],), tokens=True)
        parts.append(_table([data.tolist()], row_axis, named[0], whole))
    else:
        leading = shape[:-2]
        count = math.prod(leading)
        flat = data.reshape(count, shape[-2], shape[-1])
        for index in range(min(count, MAX_SLICES)):
            if leading:
                position = _unravel(index, leading)
                where = ", ".join(
                    f"{axis.name or 'index'} {axis.labels[i]}"
                    for axis, i in zip(named[:-2], position, strict=True)
                )
                parts.append(f'<div style="{NOTE}">{escape(where)}</div>')
            parts.append(_table(flat[index].tolist(), named[-2], named[-1], whole))
        if count > MAX_SLICES:
            parts.append(f'<div style="{NOTE}">not shown: {count - MAX_SLICES} more slices</div>')
    return "".join(parts)


def _unravel(index: int, shape: Sequence[int]) -> tuple[int, ...]:
    position = []
    for size in reversed(shape):
        index, remainder = divmod(index, size)
        position.append(remainder)
    return tuple(reversed(position))


def source_html(stage: Stage) -> str:
    """The plugin lines that ran for this stage, numbered; gaps between them marked."""
    files = dict(getattr(stage, "files", None) or {})
    if not files and stage.source_file and stage.lines:
        files = {stage.source_file: stage.lines}
    parts = []
    for path, lines in files.items():
        rows = []
        previous = None
        for line in sorted(lines):
            if previous is not None and line > previous + 1:
                rows.append("     ⋮")
            code = linecache.getline(path, line).rstrip()
            rows.append(f"{line:>5}  {code}")
            previous = line
        name = Path(path).name
        parts.append(
            f'<div style="{NOTE}">ran in {escape(name)}</div>'
            f'<pre style="{CODE}">{escape(chr(10).join(rows))}</pre>'
        )
    return "".join(parts)


def stage_html(stage: Stage, tokens: Sequence[str] = (), query: int | None = None) -> str:
    """A stage: its title and formula, each tensor as a heatmap, and the code that computed it.

    Without ``tokens`` (a stage shown on its own) every axis is labelled by index.
    """
    heading = f"{stage.index + 1}. {stage.title}" if stage.index >= 0 else stage.title
    parts = [
        f'<div style="{BOX}">',
        f'<div style="font-size: 14px; font-weight: bold">{escape(heading)} '
        f'<span style="color: #888; font-weight: normal">({escape(stage.name)})</span></div>',
    ]
    if stage.formula:
        parts.append(f"<div>{escape(stage.formula)}</div>")
    for name, tensor in stage.tensors.items():
        parts.append(tensor_html(name, tensor, stage.axes.get(name), tokens, query))
    parts.append(source_html(stage))
    parts.append("</div>")
    return "".join(parts)


def trace_html(trace: Trace) -> str:
    """Every stage the trace has completed, labelled with its tokens, then its output."""
    tokens, query = trace.tokens, trace.context.query
    header = f"{trace.variant.title} ({trace.variant.name}) on: {' '.join(tokens)}"
    if query is not None:
        header += f" · query {query} ({tokens[query]})"
    source = trace.context.source
    if source is not None:
        header += f" · source: {' '.join(source.tokens)}"
        if source.default is not None:
            header += f" (the default source, input set '{source.default}')"
    parts = [
        f'<div style="{BOX}">',
        f'<div style="font-size: 15px; font-weight: bold">{escape(header)}</div>',
    ]
    parts.extend(stage_html(stage, tokens, query) for stage in trace.stages)
    if not trace.finished:
        parts.append(f'<div style="{NOTE}">the variant has not run to the end yet</div>')
    parts.append("</div>")
    return "".join(parts)


def show_in_notebooks() -> None:
    """Give stages and traces their HTML view: Jupyter calls ``_repr_html_`` to display them.

    A stage alone knows no tokens, so its axes are labelled by index; a trace labels them with
    its tokens. Called when this module is imported.
    """
    setattr(Stage, "_repr_html_", stage_html)  # noqa: B010 (the classes do not declare it)
    setattr(Trace, "_repr_html_", trace_html)  # noqa: B010


show_in_notebooks()

TRACE_FIELDS = frozenset({"inputs", "seed", "init", "d_out", "dropout", "query", "source"})


def trace(variant: str, *, plugin_dirs: Sequence[str] = (), **options: Any) -> Trace:
    """Run ``variant`` to the end and return its :class:`~tracer.tracing.Trace`.

    In a notebook the result shows itself: every stage as a token-labelled
    heatmap with the code that ran. ``inputs``, ``seed``, ``init``, ``d_out``,
    ``dropout``, ``query`` and ``source`` are the options of ``attn trace``; any other
    keyword is one of the variant's own options (``trace("multihead", heads=3)``).
    ``inputs`` and ``source`` may also be data, as an inputs file writes it
    (``inputs={"tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]]}``), checked as a file is.
    """
    shared = {name: value for name, value in options.items() if name in TRACE_FIELDS}
    for name in ("inputs", "source"):
        if isinstance(shared.get(name), Mapping):
            shared[name] = inputs_from_data(shared[name], f"trace(..., {name}=...)")
    own = {name: value for name, value in options.items() if name not in TRACE_FIELDS}
    settings = TraceOptions(**shared, options=own)
    # Messages name the keyword a notebook user typed, not a command-line flag.
    return start_trace(
        variant,
        settings,
        PluginHost(plugin_dirs),
        where=lambda name: f"trace(..., {name}=...)",
    ).run_to_end()
