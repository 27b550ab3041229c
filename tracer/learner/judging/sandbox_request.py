"""What the sandbox is asked: the reference's arguments by name, the shapes to record, the
names of the output, and the pairs the reference hides."""

from __future__ import annotations

import math
from typing import Any

import torch

from tracer.errors import UsageError
from tracer.learner.judging.by_value import tile_shapes
from tracer.learner.judging.compare import (
    close,
)
from tracer.learner.sandbox.names import ARGUMENT_ORDER
from tracer.tracing import Trace

GIVEN = "given"
"""A stage that holds what a learner's code is handed, by parameter name (``inputs`` in place
of the run's inputs; a 0-d integer tensor as an int): a reference for a real model's layer
hands over its input and its weights in the model's own layout."""


def provided_arguments(trace: Trace) -> dict[str, Any]:
    """What the variant can hand a learner's function, by parameter name."""
    context = trace.context
    provided: dict[str, Any] = {"inputs": context.inputs}
    if trace.variant.uses_weights and context.weights is not None:
        provided.update(
            W_query=context.weights.query, W_key=context.weights.key, W_value=context.weights.value
        )
        for stage in trace.stages:
            if stage.name == "projections":  # multi-head variants show their own weights here
                provided.update(
                    {n: t for n, t in stage.tensors.items() if n.startswith(("W_", "b_"))}
                )
        if "W_out" in provided:
            provided["num_heads"] = head_count(trace)
    for stage in trace.stages:
        if stage.name == GIVEN:
            provided.update(
                {
                    n: int(t) if t.dim() == 0 and not t.is_floating_point() else t
                    for n, t in stage.tensors.items()
                }
            )
    source = context.source
    if source is not None:  # cross-attention: keys and values come from the source
        provided["source"] = source.inputs
        if "W_key" in provided and source.weights is not None:
            provided["W_key"], provided["W_value"] = source.weights.key, source.weights.value
    return provided


def head_count(trace: Trace) -> int:
    heads = trace.context.extra.get("heads")
    if isinstance(heads, int):
        return heads
    for stage in trace.stages:
        for tensor in stage.tensors.values():
            if tensor.dim() == 3 and tensor.shape[1] == len(trace.tokens):
                return int(tensor.shape[0])
    return 1


def expected_signature(provided: dict[str, Any]) -> str:
    return f"attention({', '.join(n for n in ARGUMENT_ORDER if n in provided)})"


def candidate_shapes(trace: Trace) -> set[tuple[int, ...]]:
    shapes: set[tuple[int, ...]] = set()
    for stage in trace.stages:
        for tensor in stage.tensors.values():
            shape = tuple(tensor.shape)
            shapes.add(shape)
            if len(shape) >= 3:
                shapes.add(shape[1:])
            if len(shape) >= 2:
                shapes.add((*shape[:-2], shape[-1], shape[-2]))
            if len(shape) == 1:
                shapes.add((shape[0], 1))  # a vector kept as a column (keepdim=True)
            shapes.update(tile_shapes(tensor))
    if trace.output is not None:
        shapes.add(tuple(trace.output.shape))
        if trace.output.dim() == 2:  # one row at a time: decode steps, a loop over queries
            shapes.add(tuple(trace.output.shape[-1:]))
    if reference_losses(trace) is not None:
        shapes.add(())  # each training step's loss
    return shapes


def reference_losses(trace: Trace) -> torch.Tensor | None:
    """The loss before each training step, for a variant that trains (its ``steps`` stage)."""
    for stage in trace.stages:
        loss = stage.tensors.get("loss")
        if stage.name == "steps" and loss is not None and loss.dim() == 1:
            return loss
    return None


def sandbox_request(trace: Trace, function: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(request, tensors) for the sandbox: everything the learner's code may be given."""
    provided = provided_arguments(trace)
    tensors = {n: v.detach().clone() for n, v in provided.items() if isinstance(v, torch.Tensor)}
    inputs = provided["inputs"]
    query = tensors.get("W_query")
    stacked = query is not None and query.dim() == 3
    d_out = int(query.shape[-1]) if query is not None else int(inputs.shape[-1])
    stage_names = {s.name for s in trace.stages}
    hidden = hidden_pairs(trace)
    if hidden is not None:
        tensors[HIDDEN] = hidden
    request = {
        "function": function,
        "num_heads": provided["num_heads"]
        if "num_heads" in provided
        else (head_count(trace) if stacked else None),
        "heads_argument": "num_heads" in provided,
        "shapes": sorted(candidate_shapes(trace)),
        "seed": trace.context.seed,
        "d_in": int(inputs.shape[-1]),
        "d_out": d_out,
        "context_length": int(inputs.shape[0]),
        "d_source": None if "source" not in provided else int(provided["source"].shape[-1]),
        "dropout": float(trace.context.dropout),
        "causal": "mask" in stage_names,
        "stacked": stacked,
        "output_names": output_names(trace),
        "variant_options": {
            **{
                k: v
                for k, v in trace.context.extra.items()
                if isinstance(v, (bool, int, float)) and k not in ("heads", "num_heads")
            },
            **{  # a given stage's other integers (kv_heads), as options are
                k: v for k, v in provided.items() if isinstance(v, int) and k != "num_heads"
            },
        },
    }
    return request, tensors


def output_names(trace: Trace) -> list[str]:
    """The reference's names for its output (``dX`` and ``grad_inputs`` for a backward pass):
    a field of a returned dict or dataclass named like one of them is the output."""
    expected = trace.output
    names: list[str] = []
    if expected is None:
        return names
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if tensor.is_floating_point() and close(tensor, expected):
                names += [name, stage.name]
    return list(dict.fromkeys(names))


HIDDEN = "__hidden__"
"""The sandbox's name for the (query, key) pairs the reference hides (for code that takes a mask)."""


def hidden_pairs(trace: Trace) -> torch.Tensor | None:
    """(query, key) pairs the reference hides, True where hidden: from its masked scores."""
    n = len(trace.tokens)
    for stage in trace.stages:
        masked = stage.tensors.get("masked_scores")
        if masked is not None and tuple(masked.shape) == (n, n):
            return torch.isneginf(masked)
    for stage in trace.stages:
        if stage.name != "mask":
            continue
        found = [t for t in stage.tensors.values() if t.dtype == torch.bool and t.shape == (n, n)]
        if found:
            return found[-1]
    return None


def refuse_overflow(trace: Trace) -> None:
    """Inputs whose attention overflows float32 give nothing to compare: say so up front."""
    context = trace.context
    inputs = context.inputs.double()
    problem = not bool(inputs.isfinite().all())
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if not tensor.is_floating_point():
                continue
            # Overflow shows as infinity; a NaN alone may be 0/0 in a by-product (one token
            # of zeros), and -inf is what masked scores hold on purpose.
            bad = tensor == float("inf")
            if "mask" not in name:
                bad = bad | (tensor == float("-inf"))
            if bool(bad.any()):
                problem = True
    if not problem:
        return
    # Scores grow with the square of the inputs: |q·k| <= d_out (d_in m w_q)(d_in m w_k).
    d_in = inputs.shape[-1]
    bound = float(d_in)
    if context.weights is not None:
        weights = [
            float(w.double().abs().max())
            for w in (context.weights.query, context.weights.key, context.weights.value)
        ]
        bound = d_in * d_in * context.weights.query.shape[-1] * max(weights) ** 2
    safe = math.sqrt(float(torch.finfo(torch.float32).max) / 100 / max(bound, 1e-300))
    raise UsageError(
        "these inputs are too large: their attention scores overflow float32, so "
        f"there is nothing to compare with; keep every embedding value within ±{safe:.3g}"
    )
