"""Recording the torch operations a learner's function performs, with their source lines.

A ``TorchFunctionMode`` sees every torch call while the learner's code runs:
functions, tensor methods, operators, indexing. For each one we note which
line of the learner's file made it (by walking the Python stack up to the
first frame in that file) and keep a snapshot of results whose shape could be
one of the reference's stages. Snapshots are clones, so later in-place writes
do not change what we recorded. The few operations the diagnosis inspects
(softmax, masked_fill, matrix products) also keep their arguments.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from tracer.tracing.guard import is_inplace

MATMUL_OPS = frozenset({"matmul", "__matmul__", "__rmatmul__", "mm", "bmm"})
MULTIPLY_OPS = frozenset({"mul", "__mul__", "__rmul__", "mul_", "__imul__"})
UNINITIALIZED_OPS = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided"}
)
"""Tensors made without values: what is in them is whatever the memory held before, so a run
would differ from the last. The recorder fills them (NaN, or 0 for whole numbers) so that a
check gives the same answer every time, and a cell the learner never wrote shows as NaN."""
CREATION_OPS = UNINITIALIZED_OPS | frozenset(
    {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like"}
)
"""Making a tensor to fill in later (``torch.empty(n, n)``) is not an attempt at a stage."""

REARRANGING_OPS = frozenset(
    {
        "T", "mT", "H", "mH", "t", "t_", "transpose", "transpose_", "permute", "swapaxes",
        "swapaxes_", "swapdims", "swapdims_", "movedim", "moveaxis", "flip", "fliplr",
        "flipud", "roll", "rot90",
    }
)  # fmt: skip
"""Operations that move a tensor's entries around without computing new ones."""
DROPOUT_OPS = frozenset({"dropout", "dropout_", "feature_dropout", "alpha_dropout"})
KEEP_ARGS = (
    MATMUL_OPS
    | MULTIPLY_OPS
    | DROPOUT_OPS
    | {"softmax", "masked_fill", "masked_fill_", "triu", "tril", "einsum"}
)
MAX_SNAPSHOTS = 20_000
"""Enough for a naive double loop over a few hundred tokens; beyond it we stop copying."""


@dataclass
class Record:
    """One torch operation of the learner's code."""

    index: int
    op: str
    line: int | None
    value: torch.Tensor | None = None
    """A detached copy of the result (or, for an in-place write, of the written tensor)."""
    inplace: bool = False
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    result_id: int | None = None
    calls: tuple[int, ...] = ()
    """The learner's lines that called the helper ``line`` is in, innermost first."""


@dataclass(frozen=True)
class Mutation:
    """An in-place write into one of the learner's arguments."""

    argument: str
    op: str
    line: int | None


def op_name(func: Any) -> str:
    name = getattr(func, "__name__", "") or repr(func)
    if name == "__get__":  # a property such as ``.T`` or ``.mT``
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return str(name)


def _tensors(values: Iterable[Any]) -> Iterator[torch.Tensor]:
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from _tensors(value)


def _storage(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except Exception:  # a functorch wrapper (vmap, grad) has no storage of its own
        return 0


def plain_value(tensor: torch.Tensor) -> torch.Tensor:
    """The values a tensor stands for, as a plain tensor, also inside ``torch.func`` transforms.

    Under ``vmap`` the learner's tensors are BatchedTensor wrappers holding one row (a query,
    say) at a time; the tensor they wrap holds every row, along the batch dimension, which is
    moved to the front: a per-query score vector under ``vmap`` over queries is read as the
    whole score matrix. ``grad`` and ``functionalize`` wrappers are unwrapped as they are.
    """
    functorch = getattr(torch._C, "_functorch", None)
    if functorch is None:
        return tensor
    while functorch.is_functorch_wrapped_tensor(tensor):
        if functorch.is_batchedtensor(tensor):
            axis = functorch.maybe_get_bdim(tensor)
            tensor = functorch.get_unwrapped(tensor)
            if axis >= 0:
                tensor = tensor.movedim(axis, 0)
        else:
            tensor = functorch.get_unwrapped(tensor)
    return tensor


def _wrapped(tensor: torch.Tensor) -> bool:
    functorch = getattr(torch._C, "_functorch", None)
    return functorch is not None and bool(functorch.is_functorch_wrapped_tensor(tensor))


def _fill_unwritten(tensor: torch.Tensor) -> None:
    """Known values in a tensor made without any (``torch.empty``): see UNINITIALIZED_OPS."""
    if tensor.layout != torch.strided or tensor.is_quantized:
        return  # sparse or quantized: nothing the stages are compared with
    # A leaf made with requires_grad=True may not be written otherwise; a tensor fill_
    # refuses (under a transform, say) stays as made rather than stopping the learner's code.
    with torch.no_grad(), contextlib.suppress(RuntimeError):
        if tensor.is_floating_point() or tensor.is_complex():
            tensor.fill_(float("nan"))
        else:
            tensor.zero_()


def _snapshot(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_snapshot(v) for v in value)
    return value


class Recorder(TorchFunctionMode):
    """Records the learner's torch operations while active (``with Recorder(...):``)."""

    def __init__(
        self,
        filename: str,
        shapes: set[tuple[int, ...]],
        arguments: dict[str, torch.Tensor],
    ) -> None:
        super().__init__()
        self.filename = filename
        self.shapes = shapes
        self.records: list[Record] = []
        self.mutations: list[Mutation] = []
        self.tracked: dict[int, torch.Tensor] = {}
        """masked_fill results, held (so their ids stay unique) to see whether anything uses them."""
        self.used: set[int] = set()
        """ids of tracked results that a later operation took as an argument."""
        self._arguments = {_storage(t): name for name, t in arguments.items() if _storage(t)}
        self._last_write: dict[int, Record] = {}
        self._snapshots = 0

    def watch_arguments(self, arguments: dict[str, torch.Tensor]) -> None:
        """The tensors handed to the learner's code, known only once they are made."""
        self._arguments.update({_storage(t): n for n, t in arguments.items() if _storage(t)})

    def learner_line(self) -> int | None:
        lines = self.learner_lines()
        return lines[0] if lines else None

    def learner_lines(self) -> tuple[int, ...]:
        """The learner's lines on the stack, innermost first: the line that made the
        operation, then the call sites of the helpers it is in."""
        lines = []
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                lines.append(frame.f_lineno)
            frame = frame.f_back  # type: ignore[assignment]
        return tuple(lines)

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        name = op_name(func)
        for tensor in _tensors((*args, *kwargs.values())):
            if self.tracked.get(id(tensor)) is tensor:
                self.used.add(id(tensor))
        target = self._target(name, args, kwargs)
        lines = self.learner_lines()
        line = lines[0] if lines else None
        if target is not None:
            argument = self._arguments.get(_storage(target))
            if argument is not None:
                self.mutations.append(Mutation(argument, name, line))
        # Element-wise products inside loops are many and small: keep only matrix ones.
        keep = (
            name in KEEP_ARGS
            and (name not in MULTIPLY_OPS or any(t.dim() >= 2 for t in _tensors(args)))
            # Under vmap the arguments are one sample each: their unwrapped values would not
            # multiply as the operation did, so only the result is kept (read whole).
            and not any(_wrapped(t) for t in _tensors((*args, *kwargs.values())))
        )
        kept_args = _snapshot(args) if keep else ()
        kept_kwargs = _snapshot(kwargs) if keep else {}
        result = func(*args, **kwargs)
        if name in UNINITIALIZED_OPS and isinstance(result, torch.Tensor):
            _fill_unwritten(result)
        if line is None:  # called from torch's own code, not the learner's
            return result
        record = Record(
            index=len(self.records),
            op=name,
            line=line,
            args=kept_args,
            kwargs=kept_kwargs,
            calls=lines[1:],
        )
        if isinstance(result, torch.Tensor):
            record.result_id = id(result)
            if name == "masked_fill":
                self.tracked[id(result)] = result
        written = target if target is not None else result
        if target is not None and target._base is not None and self._worth_keeping(target._base):
            # scores[i][j] = ... writes through a row view: what changed is the whole matrix.
            written = target = target._base
        if isinstance(written, torch.Tensor):
            written = plain_value(written)
        if isinstance(written, torch.Tensor) and self._worth_keeping(written):
            record.value = written.detach().clone()
            self._snapshots += 1
        if target is not None:
            record.inplace = True
            # A loop writing one cell at a time: keep only the latest state of the tensor.
            key = _storage(target)
            previous = self._last_write.get(key)
            if (
                previous is not None
                and previous.value is not None
                and target.shape == previous.value.shape
            ):
                previous.value = None
                self._snapshots -= 1
            self._last_write[key] = record
        self.records.append(record)
        return result

    def _worth_keeping(self, tensor: torch.Tensor) -> bool:
        return (
            self._snapshots < MAX_SNAPSHOTS
            and tuple(tensor.shape) in self.shapes
            and (tensor.is_floating_point() or tensor.dtype == torch.bool)
        )

    @staticmethod
    def _target(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
        out = kwargs.get("out")
        if isinstance(out, torch.Tensor):
            return out
        inplace = is_inplace(name)
        if inplace and args and isinstance(args[0], torch.Tensor):
            return args[0]
        return None


@contextlib.contextmanager
def _numpy_empty_filled(recorder: Recorder, fresh: dict[int, bytes]) -> Iterator[None]:
    """numpy's ``empty`` and ``empty_like`` hand back arrays filled (NaN, or 0 for whole
    numbers) while the learner's numpy code runs, noted as the learner's line's operation:
    see UNINITIALIZED_OPS. Only the names looked up on numpy at the call (``np.empty``) are
    covered, and only in this process, the sandbox's child. ``fresh`` gets each array's id
    and bytes as made: an array not yet written is no step of the learner's."""
    import numpy

    originals = {name: getattr(numpy, name) for name in ("empty", "empty_like")}

    def filled(name: str, make: Any) -> Any:
        def made(*args: Any, **kwargs: Any) -> Any:
            array = make(*args, **kwargs)
            line = recorder.learner_line()
            if line is not None:
                recorder.records.append(Record(index=len(recorder.records), op=name, line=line))
            kind = array.dtype.kind if isinstance(array, numpy.ndarray) else ""
            if kind and kind in "fciub":  # numbers; object or record arrays stay as made
                array.fill(numpy.nan if kind in "fc" else 0)
                fresh[id(array)] = array.tobytes()
            return array

        return made

    for name, original in originals.items():
        setattr(numpy, name, filled(name, original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(numpy, name, original)


class NumpySteps:
    """numpy code does no torch operations: its steps are read from its local variables.

    A line tracer on the learner's own frames looks, after each line, for floating
    numpy arrays (of a stage's shape) that are new or changed, and records them as
    made by that line, so numpy code gets stages and lines like torch code.
    """

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._filled: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        self._fresh: dict[int, bytes] = {}
        """Arrays numpy's ``empty`` made, by id: their bytes as made (nothing written yet)."""
        self._previous: dict[int, int] = {}
        self._seen: dict[tuple[Any, Any], bytes] = {}

    def __enter__(self) -> NumpySteps:
        self._filled = _numpy_empty_filled(self.recorder, self._fresh)
        self._filled.__enter__()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)
        self._filled.__exit__(None, None, None)

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != self.recorder.filename:
            return None
        return self._line

    def _line(self, frame: Any, event: str, arg: Any) -> Any:
        if event in ("line", "return"):
            previous = self._previous.get(id(frame))
            if previous is not None:
                self._note(frame, previous)
            self._previous[id(frame)] = frame.f_lineno
        if event == "return":  # ``return e / e.sum(axis=-1)``: a value no variable holds
            self._value(arg, ("return", id(frame)), frame.f_lineno)
        return self._line

    def _note(self, frame: Any, line: int) -> None:
        for name, value in list(frame.f_locals.items()):
            self._value(value, (id(frame), name), line)

    def _value(self, value: Any, key: tuple[Any, Any], line: int) -> None:
        recorder = self.recorder
        kind = type(value)
        if kind.__module__ != "numpy" or kind.__name__ != "ndarray":
            return
        if value.dtype.kind != "f" or tuple(value.shape) not in recorder.shapes:
            return
        data = value.tobytes()
        if self._seen.get(key) == data or recorder._snapshots >= MAX_SNAPSHOTS:
            return
        if self._fresh.get(id(value)) == data:
            return  # made to be filled in later, not yet written: no step
        if key[0] == "return" and any(data == seen for seen in self._seen.values()):
            return  # a variable already showed it
        self._seen[key] = data
        record = Record(index=len(recorder.records), op="numpy", line=line)
        record.value = torch.from_numpy(value.copy())
        recorder._snapshots += 1
        recorder.records.append(record)
