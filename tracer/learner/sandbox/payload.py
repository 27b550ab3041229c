"""What the sandbox sends back, decoded once into typed values.

The sandbox process (:mod:`tracer.learner.sandbox.child`) writes its result with
``torch.save``: a dict of plain values and tensors, the only form
``torch.load(weights_only=True)`` reads back. The learner's code ran in that process,
so nothing in the dict is trusted: :func:`decode` checks every field here, once, and
the rest of ``attn check`` reads the dataclasses below, never the dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch

from tracer.learner.sandbox.recorder import Mutation, Record


@dataclass(frozen=True)
class TensorProblem:
    """A returned value the sandbox could not send as a plain CPU tensor, and why
    (``a meta tensor (it has a shape but no values)``)."""

    problem: str


@dataclass(frozen=True)
class ReturnedOutput:
    """What the learner's code returned, as the sandbox described it."""

    tensor: torch.Tensor | TensorProblem | None = None
    """The output tensor; None when no tensor was returned (see :attr:`kind`)."""
    kind: str | None = None
    """The type of what was returned when it is not a tensor (``None``, ``int``)."""
    id: int | None = None
    """``id()`` of the returned tensor in the sandbox: the record that computed it."""
    weights: torch.Tensor | None = None
    """Attention weights returned beside it (a second value, or a ``weights`` field)."""
    fields: dict[str, torch.Tensor] | None = None
    """The other fields of a returned dict, dataclass or named tuple (usable tensors only);
    None when what was returned has no fields."""
    field_ids: dict[str, int] = field(default_factory=dict)
    """``id()`` of each field, for a result whose output is picked by value."""
    in_dict: bool = False
    """Whether the fields came in a dict (``['context']``) rather than as attributes."""

    def picked(self, name: str) -> ReturnedOutput:
        """The same result with field ``name`` as its output tensor."""
        assert self.fields is not None
        return replace(
            self,
            tensor=self.fields[name],
            id=self.field_ids.get(name),
            fields={k: v for k, v in self.fields.items() if k != name},
        )


@dataclass(frozen=True)
class Returned:
    """The learner's code ran to the end: what it computed, step by step, and returned."""

    called: str
    """What ran: ``function attention``, ``class CausalAttention(d_in=3, ...)``."""
    note: str | None
    """Why that was picked (no ``attention`` in the file), and how the output was read."""
    output: ReturnedOutput
    records: list[Record]
    mutations: list[Mutation]
    """In-place changes the learner's code made to its arguments."""
    discarded: list[int]
    """Indices of ``masked_fill`` results that were never used."""
    arguments_after: dict[str, torch.Tensor | None]
    """Each argument as it was after the call (None: it could not be sent back)."""
    dropout_lines: list[tuple[float, int]]
    """(p, line) of each ``nn.Dropout`` in the learner's module."""
    takes_dropout: bool
    """Whether the learner's code was handed the dropout rate."""


@dataclass(frozen=True)
class Failed:
    """The learner's code could not finish; ``status`` says how (``usage``, ``memory``,
    ``ended``, ``unwritten``, ``failed``, or anything else: a failure of the tool)."""

    status: str
    text: str
    line: int | None = None
    """For ``usage``: the line of the learner's file the problem is at."""


def decode(raw: Any) -> Returned | Failed | None:
    """The sandbox's result, checked; None when it is not a result at all."""
    if not isinstance(raw, dict) or not isinstance(raw.get("status"), str):
        return None
    status = raw["status"]
    if status != "ok":
        line = raw.get("line")
        text = raw.get("message") if status == "usage" else raw.get("text")
        return Failed(status, str(text), line if isinstance(line, int) else None)
    note = raw.get("note")
    return Returned(
        called=str(raw.get("called") or ""),
        note=note if isinstance(note, str) else None,
        output=_output(raw.get("output")),
        records=[r for r in map(_record, _list(raw.get("records"))) if r is not None],
        mutations=[
            Mutation(str(m[0]), str(m[1]), m[2] if isinstance(m[2], int) else None)
            for m in _list(raw.get("mutations"))
            if isinstance(m, (list, tuple)) and len(m) == 3
        ],
        discarded=[i for i in _list(raw.get("discarded")) if type(i) is int],
        arguments_after=_arguments_after(raw.get("arguments_after")),
        dropout_lines=[
            (float(item[0]), item[1])
            for item in _list(raw.get("dropout_lines"))
            if isinstance(item, (list, tuple))
            and len(item) == 2
            and isinstance(item[0], (int, float))
            and isinstance(item[1], int)
        ],
        takes_dropout=raw.get("takes_dropout") is True,
    )


def usable(value: Any) -> torch.Tensor | None:
    """A tensor the comparisons can trust: dense, on the CPU, real."""
    if not isinstance(value, torch.Tensor) or type(value) is not torch.Tensor:
        return None
    if value.layout != torch.strided or value.device.type != "cpu" or value.is_complex():
        return None
    return value


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _output(data: Any) -> ReturnedOutput:
    if not isinstance(data, dict):
        return ReturnedOutput()
    tensor: torch.Tensor | TensorProblem | None = None
    if "tensor" in data:
        value = data["tensor"]
        if isinstance(value, torch.Tensor):
            tensor = value
        elif isinstance(value, dict):  # the sandbox's description of an unusable tensor
            tensor = TensorProblem(str(value.get("problem", "an unusable tensor")))
        else:
            tensor = TensorProblem("something that is not a tensor")
    kind, weights, fields, ids = (data.get(k) for k in ("type", "weights", "fields", "field_ids"))
    output_id = data.get("id")
    return ReturnedOutput(
        tensor=tensor,
        kind=None if kind is None else str(kind),
        id=output_id if type(output_id) is int else None,
        weights=weights if isinstance(weights, torch.Tensor) else None,
        fields=(
            {str(k): u for k, v in fields.items() if (u := usable(v)) is not None}
            if isinstance(fields, dict)
            else None
        ),
        field_ids=(
            {str(k): v for k, v in ids.items() if type(v) is int} if isinstance(ids, dict) else {}
        ),
        in_dict=bool(data.get("dict")),
    )


def _arguments_after(data: Any) -> dict[str, torch.Tensor | None]:
    if not isinstance(data, dict):
        return {}
    return {str(name): usable(value) for name, value in data.items() if value is not None}


def _plain_args(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return usable(value)
    if isinstance(value, list):
        return tuple(_plain_args(v) for v in value)
    return value


def _record(data: Any) -> Record | None:
    if not isinstance(data, dict) or not isinstance(data.get("index"), int):
        return None
    line = data.get("line")
    result_id = data.get("result_id")
    kwargs = data.get("kwargs")
    args = _plain_args(data.get("args"))
    return Record(
        index=data["index"],
        op=str(data.get("op")),
        line=line if isinstance(line, int) else None,
        value=usable(data.get("value")),
        inplace=bool(data.get("inplace")),
        args=args if isinstance(args, tuple) else (),
        kwargs={str(k): _plain_args(v) for k, v in kwargs.items()}
        if isinstance(kwargs, dict)
        else {},
        result_id=result_id if isinstance(result_id, int) else None,
        calls=tuple(c for c in _list(data.get("calls")) if isinstance(c, int)),
    )
