"""Copy-on-write for recorded tensors.

Stages and sub-steps are recorded without copying: a step holds its own
tensor object (detached, as a worker process sends it) over the variant's
storage. If the variant later modifies a recorded tensor in place
(``scores.masked_fill_(...)``, ``W.data.sub_(...)``, ``x[i] = ...``), the
earlier step would silently show the new values. A ``TorchFunctionMode``
sees every torch call while the variant runs; just before an in-place call
writes to storage that a step holds, the step's tensor is moved onto a copy
of its values, in place, so a reader who already took it (a JSON document
being written, a table on screen) keeps the values that were recorded. Two writers never pass through torch functions, so they
are handled where they start: autograd accumulating into ``.grad`` (every
held tensor is cloned when ``backward`` runs) and writes through a numpy
view (a held tensor is cloned as soon as a numpy view of it is taken, and a
tensor that already has one is copied when it is recorded).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from tracer.variant import Stage, SubStep

Holder = tuple[Callable[[], "Stage | SubStep | None"], str]
PRUNE_FROM = 64
BACKWARD = frozenset({"backward", "grad"})
NUMPY_VIEWS = frozenset({"numpy", "__array__"})

INPLACE_DUNDERS = frozenset(
    {
        "__setitem__",
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "__ifloordiv__",
        "__imod__",
        "__ipow__",
        "__imatmul__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
    }
)


def is_inplace(name: str) -> bool:
    """Whether a torch function or method of this name writes into its first argument."""
    return name in INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("__"))


def _writes_to(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The tensor an in-place or ``out=`` call is about to write, if any."""
    out = kwargs.get("out")
    if out is not None:
        return out
    if is_inplace(getattr(func, "__name__", "")):
        return args[0] if args else None
    return None


class CopyOnWrite(TorchFunctionMode):
    """Clones a step's tensor just before anything writes to its storage.

    Sub-steps are held weakly: once the reader drops one, nothing is cloned for it.
    """

    def __init__(self) -> None:
        super().__init__()
        self._holders: dict[int, list[Holder]] = {}
        self._prune_at: dict[int, int] = {}
        self._exposed: set[int] = set()
        """Storages a numpy view was taken of: writes to them are invisible to torch."""

    def protect(self, step: Stage | SubStep) -> None:
        ref: Callable[[], Stage | SubStep | None]
        if isinstance(step, SubStep):
            ref = weakref.ref(step)
        else:  # stages are kept by the trace for good

            def ref(stage: Stage = step) -> Stage:
                return stage

        for name, tensor in step.tensors.items():
            if isinstance(tensor, torch.Tensor) and tensor.layout == torch.strided:
                key = _storage(tensor)
                if key in self._exposed:  # a numpy view may write at any time: copy now
                    step.tensors[name] = tensor.detach().clone()
                    continue
                # The step's own object: the variant's writes through its own one (or ``.data``)
                # are what the guard sees coming, and this one is what moves to a copy.
                step.tensors[name] = tensor.detach()
                if key:
                    held = self._holders.setdefault(key, [])
                    held.append((ref, name))
                    if len(held) > self._prune_at.get(key, PRUNE_FROM):
                        # Drop sub-steps the reader has let go of, so a long loop stays small;
                        # only when the list has doubled, so each protect costs O(1) on average.
                        held[:] = [(r, n) for r, n in held if r() is not None]
                        self._prune_at[key] = max(PRUNE_FROM, 2 * len(held))

    def _clone(self, key: int) -> None:
        for ref, name in self._holders.pop(key, ()):
            step = ref()
            tensor = step.tensors.get(name) if step is not None else None
            if isinstance(tensor, torch.Tensor):
                # In place: whoever holds this tensor already keeps the recorded values.
                tensor.data = tensor.clone()

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in NUMPY_VIEWS and args and isinstance(args[0], torch.Tensor):
            self._exposed.add(_storage(args[0]))
            self._clone(_storage(args[0]))
        if self._holders:
            if name in BACKWARD:
                for key in list(self._holders):
                    self._clone(key)
            target = _writes_to(func, args, kwargs)
            targets = target if isinstance(target, (tuple, list)) else (target,)
            for tensor in targets:
                if isinstance(tensor, torch.Tensor):
                    self._clone(_storage(tensor))
        return func(*args, **kwargs)


def _storage(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # sparse, meta and other storage-less tensors
        return 0
