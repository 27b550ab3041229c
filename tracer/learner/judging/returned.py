"""What the learner's code returned, judged: the output tensor, a field picked from several,
the weights and other fields returned beside it, and the arguments it changed."""

from __future__ import annotations

from dataclasses import replace

import torch

from tracer.learner.judging.compare import (
    close,
    matches_any,
    max_difference,
)
from tracer.learner.sandbox.names import normal_name
from tracer.learner.sandbox.payload import ReturnedOutput, TensorProblem, usable
from tracer.tracing import Trace


def changed_arguments(
    given: dict[str, torch.Tensor], after: dict[str, torch.Tensor | None]
) -> list[str]:
    """Arguments whose values differ after the learner's call (compared here, not there)."""
    changed = []
    for name, original in given.items():
        if name not in after:
            continue
        value = after[name]
        if value is None or tuple(value.shape) != tuple(original.shape):
            changed.append(name)
            continue
        same = (value.double() == original.double()) | (value.isnan() & original.isnan())
        if not bool(same.all()):
            changed.append(name)
    return changed


def checked_output(
    output: ReturnedOutput, expected: torch.Tensor
) -> tuple[torch.Tensor | None, str | None]:
    """The learner's result if it is a real floating CPU tensor of the reference's shape; else why not."""
    value = output.tensor
    if value is None:
        kind = output.kind
        if kind == "None":
            return None, "attention() returned None: did you forget `return`?"
        return None, f"attention() returned {kind or 'nothing usable'}, not a tensor"
    if isinstance(value, TensorProblem):
        return None, f"attention() returned {value.problem}"
    if value.is_complex():
        return None, (
            f"attention() returned a complex tensor ({value.dtype}); attention is real: "
            "drop whatever made it complex"
        )
    if not value.is_floating_point():
        return None, (
            f"attention() returned a {value.dtype} tensor; context vectors are floating point "
            "(did an integer tensor or a comparison slip in?)"
        )
    if tuple(value.shape) != tuple(expected.shape):
        return value, (
            f"attention() returned a tensor of shape {_shape(value)}; expected {_shape(expected)}"
        )
    bad = ~value.isfinite()
    if bool(bad.any()):
        nan, inf = int(value.isnan().sum()), int(value.isinf().sum())
        parts = [f"{nan} NaN" if nan else "", f"{inf} infinite" if inf else ""]
        return value, (
            f"attention() returned {' and '.join(p for p in parts if p)} value"
            f"{'s' if nan + inf > 1 else ''} out of {value.numel()}"
        )
    return value, None


def pick_field(output: ReturnedOutput, expected: torch.Tensor) -> tuple[ReturnedOutput, str | None]:
    """A returned dict or dataclass of several tensors, none named as the output: the field
    that equals the expected output, else the one shaped like it (the last, when several are).
    Returns the output with that field as its tensor, and a note saying which was compared."""
    fields = output.fields
    if output.tensor is not None or fields is None:
        return output, None
    shaped = [k for k, v in fields.items() if tuple(v.shape) == tuple(expected.shape)]
    equal = [k for k in shaped if fields[k].is_floating_point() and close(fields[k], expected)]
    if not shaped:
        names = ", ".join(fields) or "none"
        kind = f"{output.kind or 'dict'} of tensors ({names}), none {_shape(expected)}"
        return replace(output, kind=kind), None
    name = (equal or shaped)[-1]
    how = "it equals the expected output" if equal else f"it is the one shaped {_shape(expected)}"
    where = f"its ['{name}']" if output.in_dict else f"its field {name}"
    kind = "a dict" if output.in_dict else f"a {output.kind}"
    picked = output.picked(name)
    return picked, f"it returned {kind} of several tensors, and {where} was compared ({how})"


def returned_fields_problem(fields: dict[str, torch.Tensor], trace: Trace) -> str | None:
    """Every other returned field named like a reference tensor or stage (``dQ``, ``grad_q``,
    ``weights``) must hold one of the reference's tensors: a wrong gradient beside a right
    output is still wrong. Fields named like nothing the variant has are not judged."""
    named: dict[str, tuple[str, torch.Tensor]] = {}
    every: list[torch.Tensor] = []
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            if not tensor.is_floating_point():
                continue
            every.append(tensor)
            named.setdefault(normal_name(name), (stage.name, tensor))
            if name == stage.name or len(stage.tensors) == 1:
                named.setdefault(normal_name(stage.name), (stage.name, tensor))
    for field_name, value in fields.items():  # usable tensors only (decoded so)
        known = named.get(normal_name(str(field_name)))
        if value is None or known is None or not value.is_floating_point():
            continue
        stage_name, tensor = known
        if tuple(value.shape) != tuple(tensor.shape) or matches_any(value, every):
            continue
        return (
            f"the {field_name} your function returns differs from the '{stage_name}' stage "
            f"(largest difference {max_difference(value, tensor):.3g})"
        )
    return None


def returned_weights_problem(weights: torch.Tensor, trace: Trace) -> str | None:
    """Weights returned next to the context must be the reference's (after dropout, if any)."""
    wanted = [s.tensors["weights"] for s in trace.stages if "weights" in s.tensors]
    if not wanted:
        return None
    value = usable(weights)
    if value is not None and value.is_floating_point() and any(close(value, w) for w in wanted):
        return None
    return (
        "the attention weights your function returns (second value) differ from the 'weights' stage"
    )


def _shape(tensor: torch.Tensor) -> str:
    return "×".join(map(str, tensor.shape)) or "scalar"
