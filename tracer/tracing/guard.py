"""Copy-on-write for recorded tensors.

Stages are recorded without copying. If the variant later modifies a
recorded tensor in place (``scores.masked_fill_(...)``, ``x[i] = ...``), the
earlier stage would silently show the new values. A ``TorchFunctionMode``
sees every torch call while the variant runs; just before an in-place call
writes to storage that a stage holds, that stage's tensor is cloned.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from tracer.variant import Stage

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
    """Clones a stage's tensor just before anything writes to its storage."""

    def __init__(self) -> None:
        super().__init__()
        self._holders: dict[int, list[tuple[Stage, str]]] = {}

    def protect(self, stage: Stage) -> None:
        for name, tensor in stage.tensors.items():
            if isinstance(tensor, torch.Tensor):
                key = tensor.untyped_storage().data_ptr()
                if key:
                    self._holders.setdefault(key, []).append((stage, name))

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        target = _writes_to(func, args, kwargs)
        targets = target if isinstance(target, (tuple, list)) else (target,)
        for tensor in targets:
            if isinstance(tensor, torch.Tensor) and self._holders:
                holders = self._holders.pop(tensor.untyped_storage().data_ptr(), None)
                for stage, name in holders or ():
                    stage.tensors[name] = stage.tensors[name].clone()
        return func(*args, **kwargs)
