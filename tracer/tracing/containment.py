"""Keeping code we did not write from changing the process around it.

While a plugin is imported, registers its variants or computes a step:
- ``os._exit`` raises :class:`PluginExit` instead of ending the process, so
  the tool can report the plugin and go on (``sys.exit`` already raises);
- torch's global defaults (default dtype, grad mode, deterministic
  algorithms) are put back afterwards, so one plugin setting float64 cannot
  change the numbers of the built-in variants that run after it.

It cannot stop code that is set on escaping (``posix._exit``, signals): a
plugin is still trusted code. It stops the accidents and the lessons'
"what if" experiments from taking the tool down.
"""

from __future__ import annotations

import os
import threading
from typing import Any

_REAL_EXIT = os._exit
_lock = threading.Lock()
_depth = 0


class PluginExit(BaseException):
    """A plugin called ``os._exit``; raised in its place."""

    def __init__(self, code: object) -> None:
        super().__init__(f"called os._exit({code!r})")
        self.code = code


def _refuse_exit(code: object = 0) -> None:
    raise PluginExit(code)


class TorchDefaults:
    """The torch settings a plugin can change for everyone with one call."""

    __slots__ = ("deterministic", "dtype", "grad")

    def __init__(self) -> None:
        torch = _torch()
        self.dtype = torch.get_default_dtype()
        self.grad = torch.is_grad_enabled()
        self.deterministic = torch.are_deterministic_algorithms_enabled()

    def restore(self) -> list[str]:
        """Put the settings back; the names of the ones that had changed."""
        torch = _torch()
        changed = []
        if torch.get_default_dtype() != self.dtype:
            torch.set_default_dtype(self.dtype)
            changed.append("default dtype")
        if torch.is_grad_enabled() != self.grad:
            torch.set_grad_enabled(self.grad)
            changed.append("grad mode")
        if torch.are_deterministic_algorithms_enabled() != self.deterministic:
            torch.use_deterministic_algorithms(self.deterministic)
            changed.append("deterministic algorithms")
        return changed


class contained:
    """Run plugin code with ``os._exit`` refused and torch's defaults restored afterwards.

    Names of torch settings the code changed are appended to ``changed``. A
    class rather than a generator: it wraps every step, so it must be cheap.
    """

    __slots__ = ("_changed", "_defaults")

    def __init__(self, changed: list[str] | None = None) -> None:
        self._changed = changed
        self._defaults: TorchDefaults | None = None

    def __enter__(self) -> None:
        global _depth
        self._defaults = TorchDefaults()
        with _lock:
            _depth += 1
            if _depth == 1:
                setattr(os, "_exit", _refuse_exit)  # noqa: B010  (mypy: os._exit is a function)

    def __exit__(self, *exc: object) -> None:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                setattr(os, "_exit", _REAL_EXIT)  # noqa: B010
        assert self._defaults is not None
        undone = self._defaults.restore()
        if self._changed is not None:
            self._changed.extend(undone)


_TORCH: Any = None


def _torch() -> Any:
    """torch, imported on first use: this module is imported before torch is."""
    global _TORCH
    if _TORCH is None:
        import torch

        _TORCH = torch
    return _TORCH
