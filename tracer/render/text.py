"""Plain-text and JSON renderings of a trace: what ``attn trace`` prints.

Plain text is for terminals, pipes and screen readers: no colour, no box
drawing, one tensor row per line, 4 decimals.
"""

from __future__ import annotations

import itertools
import json
import linecache
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.render.labels import axes_hint, axis_labels, effective_axes, label_axes
from tracer.sanitize import clip, display_width, pad, visible
from tracer.variant import Stage, SubStep, equation_json, given_padding, parse_axis

if TYPE_CHECKING:
    import torch

    from tracer.tracing import Trace


def format_number(value: float | bool, whole: bool = False) -> str:
    """One number as every front end prints it: 4 decimals, or whole.

    ``whole``: the number belongs to a table whose values are all whole numbers
    (:func:`is_whole`: counts, token ids, a 0/1 mask, 742), so ``742`` and not
    ``742.0000``; a value that is not whole still prints its decimals.
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):  # an integer tensor (token ids, counts): whole, not "17.0000"
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    if abs(value) >= SCIENTIFIC_FROM:  # 3.4e38 as 3.4000e+38, never 39 digits
        return f"{value:.4e}"
    if whole and value == int(value):
        return str(int(value))  # -0.0 too: "0"
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text


def format_scalar(value: float | bool) -> str:
    """A number shown on its own (a loop's running value, a count): whole when it is whole."""
    if isinstance(value, bool | int):
        return format_number(value)
    return format_number(value, whole=math.isfinite(value) and value == int(value))


def format_size(value: float) -> str:
    """A difference's size on its own: "0" only when the bits agree, and a size too small
    for four decimals in scientific notation ("6.0e-08"), never a "0.0000" that is not 0."""
    if value and math.isfinite(value) and abs(value) < 0.00005:
        return f"{value:.1e}"
    return format_scalar(value)


WHOLE_CHUNK = 1 << 20
"""Values checked at once by :func:`is_whole` (a float table stops at its first chunk)."""


def is_whole(tensor: torch.Tensor) -> bool:
    """Whether every number of ``tensor`` is a whole number (inf and nan aside), so its
    table prints ``742`` and ``0``/``1``, not ``742.0000``; an integer or bool tensor is.

    Read in chunks that stop at the first fraction: a float table of 2^28 values
    usually answers from its first chunk, and never makes a copy of itself.
    """
    if not tensor.is_floating_point():
        return not tensor.is_complex()
    flat = tensor.detach().reshape(-1)
    for start in range(0, flat.numel(), WHOLE_CHUNK):
        chunk = flat[start : start + WHOLE_CHUNK]
        finite = chunk[chunk.isfinite()]
        if finite.numel() and not bool((finite == finite.trunc()).all()):
            return False
    return True


SCIENTIFIC_FROM = 1e15
"""Magnitude from which a number is printed in scientific notation (``1.0000e+15``)."""


ROW_LIMIT = 64
"""Rows of one table printed; the rest are counted (``--json`` has every value)."""
COLUMN_LIMIT = 32
"""Columns of one table printed."""
WRAPPED_COLUMN_LIMIT = 256
"""Columns printed when the table wraps into blocks (a lesson's 51 losses are read whole)."""
TOKENS_SHOWN = ROW_LIMIT
"""Tokens listed in the ``tokens:`` line above a trace (``--json`` lists every one)."""
SLICE_LIMIT = 8
"""2-d slices of a 3-d or higher tensor printed."""


def format_tensor(
    tensor: torch.Tensor,
    tokens: tuple[str, ...],
    query: int | None = None,
    axes: Sequence[str] | None = None,
    hidden: frozenset[tuple[int, int]] = frozenset(),
    wrap: int | None = None,
    whole: bool | None = None,
) -> str:
    """A labelled table of a 0-, 1- or 2-d tensor; higher ranks print one 2-d slice per index.

    ``hidden``: cells (row, column of the tensor folded to two dimensions) printed as "?".
    ``wrap``: a table wider than this many characters is printed as blocks of columns, one
    under the other, each with its row labels (None: one block, however wide).
    ``whole``: print whole numbers without decimals (None: when every value is whole).

    Only the top-left corner that is printed is ever turned into text (at most
    ROW_LIMIT × COLUMN_LIMIT values, SLICE_LIMIT slices): a 16,384-token score
    matrix costs what its corner costs, and what is left out is said in words.
    """
    data = tensor.detach()
    shape = tuple(data.shape)
    if whole is None:  # decided for the whole tensor: the app prints the same table the same way
        whole = is_whole(data)
    if data.dim() > 2:
        names = effective_axes(shape, axes, query)
        leading = label_axes(shape, names, tokens, limit=SLICE_LIMIT)[0]
        inner = names[1:] if names is not None else None
        title = f"{leading.name} " if leading.name and not leading.tokens else ""
        rows_per_slice = data[0].reshape(-1, data.shape[-1]).shape[0] if data.shape[0] else 0
        parts = [
            f"[{title}{_label(label)}]\n"
            + format_tensor(
                data[index],
                tokens,
                None,
                inner,
                frozenset((r - index * rows_per_slice, c) for r, c in hidden),
                wrap,
                whole,
            )
            for index, label in enumerate(leading.labels)
        ]
        if shape[0] > SLICE_LIMIT:
            parts.append(f"… {_more(shape[0] - SLICE_LIMIT, 'more slice')} not printed")
        return "\n".join(parts)
    column_limit = COLUMN_LIMIT if wrap is None else WRAPPED_COLUMN_LIMIT
    labels = axis_labels(shape, tokens, query, axes, limit=max(ROW_LIMIT, column_limit))
    rows, columns = labels.rows, labels.columns
    all_rows = shape[0] if data.dim() == 2 else 1
    all_columns = shape[-1] if data.dim() > 0 else 1
    if data.dim() == 2:
        rows, corner = rows[:ROW_LIMIT], data[:ROW_LIMIT, :column_limit]
    else:
        corner = data.reshape(-1)[:column_limit]
    columns = columns[:column_limit]
    values = corner.cpu().reshape(len(rows), len(columns)).tolist()
    # Made visible first, then cut and measured in display columns: what the terminal shows.
    rows = tuple(_label(label) for label in rows)
    columns = tuple(_label(label) for label in columns)
    cells = [
        ["?" if (r, c) in hidden else format_number(v, whole) for c, v in enumerate(row)]
        for r, row in enumerate(values)
    ]
    if all_columns > len(columns):  # a row that goes on says so where it stops
        columns = (*columns, "…")
        cells = [[*row, "…"] for row in cells]
    width = max(
        [len(c) for row in cells for c in row] + [display_width(c) for c in columns], default=0
    )
    label_width = max((display_width(r) for r in rows), default=0)
    step = max(1, len(columns))
    if wrap is not None and label_width + 2 + step * (width + 2) - 2 > wrap:
        step = max(1, (wrap - label_width) // (width + 2))
    lines: list[str] = []
    for start in range(0, max(1, len(columns)), step):
        if start:
            lines.append("")  # a block of further columns
        block = slice(start, start + step)
        if data.dim() > 0:
            header = (
                " " * label_width
                + "  "
                + "  ".join(pad(c, width, right=True) for c in columns[block])
            )
            lines.append(header.rstrip())
        for label, row in zip(rows, cells, strict=True):
            lines.append(
                (
                    pad(label, label_width) + "  " + "  ".join(c.rjust(width) for c in row[block])
                ).rstrip()
            )
    if all_rows > len(rows) or all_columns > column_limit:
        left = []
        if all_rows > len(rows):
            left.append(_more(all_rows - len(rows), "more row"))
        if all_columns > column_limit:
            left.append(_more(all_columns - column_limit, "more column"))
        lines.append(f"… {' and '.join(left)} not printed (attn trace --json prints every value)")
    return "\n".join(line if line.strip() else line.strip() for line in lines).strip("\n")


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` display columns, cut at a word boundary and ending in
    "…" where it was cut: a title cut mid-word ("(1 = hidde…") reads as another word.

    A first word wider than ``width`` on its own is cut where it must be.
    """
    if display_width(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    words = text.split(" ")
    kept = ""
    for word in words:
        candidate = f"{kept} {word}" if kept else word
        if display_width(candidate) + 1 > width:
            break
        kept = candidate
    if kept.count("(") > kept.count(")"):  # no half of a bracket: "(1 =…" says nothing
        kept = kept[: kept.rindex("(")]
    kept = kept.rstrip(" ,;:·-–—(=+×/")
    if not kept:
        return clip(text, width)
    return kept + "…"


def _label(text: str) -> str:
    """A token as a label: made visible, then cut to LABEL_LIMIT display columns."""
    return clip(visible(text, multiline=False))


def _more(count: int, what: str) -> str:
    return f"{count:,} {what}{'' if count == 1 else 's'}"


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
    out.extend(f"   {name}: {text}" for name, text in stage.formulas.items())
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
    total = len(trace.variant.stages)
    variant = trace.variant
    focus = ""
    if trace.context.query is not None:
        focus = f", query {trace.context.query} ({_label(trace.tokens[trace.context.query])})"
    # Run to the first step before printing anything: a variant that rejects its
    # options fails here, and the user sees only the error line.
    first = next(trace, None)
    shown = " ".join(_label(token) for token in trace.tokens[:TOKENS_SHOWN])
    if len(trace.tokens) > TOKENS_SHOWN:
        shown += f" … ({len(trace.tokens) - TOKENS_SHOWN:,} more)"
    header = f"{variant.name}: {variant.title}\ntokens: {shown}{focus}"
    yield f"{header}{source_line(trace)}\n"
    for step in itertools.chain([first] if first is not None else [], trace):
        if isinstance(step, Stage):
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


def source_line(trace: Trace) -> str:
    """``\nsource: ...`` under the tokens when the run has a second sequence, saying so when
    it is the variant's default source; empty otherwise."""
    source = trace.context.source
    if source is None:
        return ""
    line = f"\nsource: {' '.join(source.tokens)}"
    if source.default is not None:
        line += f" (the default source, input set '{source.default}'; --source gives another)"
    return line


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


class LazyTensor:
    """A tensor in a document that :func:`write_json` writes row by row, never as one list."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


def step_json(
    step: Stage | SubStep, query: int | None, tensor: Callable[[torch.Tensor], Any] = tensor_json
) -> dict[str, Any]:
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
    if isinstance(step, Stage) and step.formulas:
        document["formulas"] = dict(step.formulas)
    document["source"] = {
        "file": step.source_file,
        "lines": list(step.lines),
        "files": {path: list(lines) for path, lines in step.files.items()},
    }
    # ``axes`` as declared (a focused query's row keeps its query axis, so an oracle knows
    # which row it holds); ``shown_axes`` those of the tensor as it is, one per dimension.
    shown = {
        name: list(effective_axes(tuple(t.shape), step.axes.get(name), query) or ())
        for name, t in step.tensors.items()
    }
    document["axes"] = {
        name: list(step.axes[name]) if shown[name] and name in step.axes else shown[name]
        for name in step.tensors
    }
    document["shown_axes"] = shown
    equations = getattr(step, "equations", ()) or ()
    if equations:
        document["equations"] = [equation_json(equation) for equation in equations]
    document["tensors"] = {name: tensor(t) for name, t in step.tensors.items()}
    return document


def trace_json(
    trace: Trace,
    stages: Collection[str] | None = None,
    substeps: bool = False,
    tensor: Callable[[torch.Tensor], Any] = tensor_json,
) -> dict[str, Any]:
    """One JSON document: the run's stages (and sub-steps when asked), then its output.

    ``tensor=LazyTensor`` leaves the tensors for :func:`write_json` to write row by row.
    """
    query = trace.context.query
    kept: list[dict[str, Any]] = []
    loops: list[dict[str, Any]] = []
    for step in trace:
        if isinstance(step, SubStep):
            if substeps and (stages is None or step.stage in stages):
                loops.append(step_json(step, query, tensor))
        elif stages is None or step.name in stages:
            kept.append(step_json(step, query, tensor))
    document: dict[str, Any] = {
        "variant": trace.variant.name,
        "tokens": list(trace.tokens),
        "query": query,
        "options": {k: v for k, v in trace.context.options.items() if _is_json(v)},
        "stages": kept,
    }
    if trace.context.source is not None:
        document["source_tokens"] = list(trace.context.source.tokens)
        if trace.context.source.default is not None:
            document["source_default"] = trace.context.source.default
    document.update(_made_json(trace, tensor))
    if substeps:
        document["substeps"] = loops
    document["output"] = tensor(trace.output) if trace.output is not None else None
    return document


def _made_json(trace: Trace, tensor: Callable[[torch.Tensor], Any]) -> dict[str, Any]:
    """What an outside oracle needs to rerun the trace: the seed, how the weights were made
    (``init`` is null when the inputs gave them), d_out, and every weight and parameter."""
    context = trace.context
    made: dict[str, Any] = {"seed": context.seed, "init": context.init, "d_out": context.d_out}
    made["dropout"] = context.dropout
    made["embeddings"] = tensor(context.inputs)
    if context.source is not None:
        made["source_embeddings"] = tensor(context.source.inputs)
    padding = given_padding(context)
    if padding is not None:
        made["padding"] = list(padding)
    if context.weights is not None:
        made["weights"] = {
            "query": tensor(context.weights.query),
            "key": tensor(context.weights.key),
            "value": tensor(context.weights.value),
        }
    if context.source is not None and context.source.weights is not None:
        made["source_weights"] = {
            "key": tensor(context.source.weights.key),
            "value": tensor(context.source.weights.value),
        }
    if context.params:
        made["params"] = {name: tensor(value) for name, value in context.params.items()}
        inits = getattr(context.params, "inits", {})
        made["param_inits"] = {name: inits[name] for name in context.params if name in inits}
    return made


def write_json(value: Any, write: Callable[[str], object], indent: int = 1, level: int = 0) -> None:
    """``json.dumps(value, indent=indent)`` written in pieces, :class:`LazyTensor` included.

    The same text as ``json.dumps`` (tests hold it to that), but a tensor is turned
    into text one row at a time: a 2^28-value score matrix never exists as Python
    floats all at once (that alone is over 8 GB).
    """
    if isinstance(value, LazyTensor):
        _write_tensor(value.tensor.detach().cpu(), write, indent, level)
    elif isinstance(value, dict) and value:
        inner = "\n" + " " * (indent * (level + 1))
        write("{")
        for number, (key, item) in enumerate(value.items()):
            write(("," if number else "") + inner + json.dumps(str(key)) + ": ")
            write_json(item, write, indent, level + 1)
        write("\n" + " " * (indent * level) + "}")
    elif isinstance(value, list) and value:
        inner = "\n" + " " * (indent * (level + 1))
        write("[")
        for number, item in enumerate(value):
            write(("," if number else "") + inner)
            write_json(item, write, indent, level + 1)
        write("\n" + " " * (indent * level) + "]")
    else:
        write(json.dumps(value))


ROWS_AT_ONCE = 65_536
"""Values of a tensor turned into Python numbers at once by :func:`write_json`."""


def _write_tensor(
    tensor: torch.Tensor, write: Callable[[str], object], indent: int, level: int
) -> None:
    if tensor.dim() == 0:
        write(json.dumps(plain(tensor.item())))
        return
    if tensor.shape[0] == 0:
        write("[]")
        return
    inner = "\n" + " " * (indent * (level + 1))
    write("[")
    if tensor.dim() == 1:
        for start in range(0, tensor.shape[0], ROWS_AT_ONCE):
            values = plain(tensor[start : start + ROWS_AT_ONCE].tolist())
            write(
                ("," if start else "") + inner + ("," + inner).join(json.dumps(v) for v in values)
            )
    else:
        for index in range(tensor.shape[0]):
            write(("," if index else "") + inner)
            _write_tensor(tensor[index], write, indent, level + 1)
    write("\n" + " " * (indent * level) + "]")


def _is_json(value: object) -> bool:
    return isinstance(value, (int, float, str, bool)) or value is None
