"""What a variant declares it takes: its options (:class:`Option`) and its trainable
parameters (:class:`Param`), each checked where the plugin writes it. Import them from
``tracer``."""

from __future__ import annotations

import keyword
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tracer.errors import Location
from tracer.suggest import did_you_mean

OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
OPTION_TYPES: tuple[type, ...] = (int, float, bool, str)


@dataclass(frozen=True)
class Option:
    """An option a variant declares: ``Option("window", int, 2, "keys each query sees", min=1)``.

    Users set it with ``-o window=3`` on the command line or ``options: {window: 3}`` in a
    lesson; the value is checked against ``type``, ``min``, ``max`` and ``choices`` before the
    run starts, and reaches the variant as ``run.options["window"]``.
    """

    name: str
    type: type
    default: Any
    help: str = ""
    min: float | str | None = None
    """The smallest value allowed: a number, or a size the inputs decide (``"tokens"``,
    ``"tokens-1"``: see :data:`PARAM_DIMS`), checked when the run starts."""
    max: float | str | None = None
    """The largest value allowed, as ``min`` (``Option("k", int, 2, max="tokens")``)."""
    choices: tuple[Any, ...] | None = None

    declared_at: Location | None = field(default=None, compare=False, repr=False)
    """Where the plugin wrote ``Option(...)`` (filled in when the option is made)."""
    problem: str | None = field(default=None, compare=False, repr=False)
    """Why the declaration cannot work, when it was made while a plugin loads: the
    variant that uses it then fails alone (see :func:`deferred_declarations`)."""
    above: float | None = field(default=None, kw_only=True)
    """An exclusive lower bound: the value must be greater (``above=0`` for a cap > 0)."""
    below: float | None = field(default=None, kw_only=True)
    """An exclusive upper bound: the value must be smaller (``below=1`` for a share)."""

    @property
    def optional(self) -> bool:
        """Whether the option is absent unless given: its default is None, and
        ``run.options[name]`` is None when nobody sets it."""
        return self.default is None

    def sized_bounds(self) -> list[tuple[str, str]]:
        """``("max", "tokens")``: the bounds the inputs decide, checked when the run starts."""
        return [(k, v) for k, v in (("min", self.min), ("max", self.max)) if isinstance(v, str)]

    def __post_init__(self) -> None:
        if self.declared_at is None:
            caller = sys._getframe(2)
            object.__setattr__(
                self, "declared_at", Location(caller.f_code.co_filename, caller.f_lineno)
            )
        problem = self._problem()
        if problem is None:
            return
        if not deferring():
            raise ValueError(problem)
        object.__setattr__(self, "problem", problem)

    def _problem(self) -> str | None:
        name = self.name if isinstance(self.name, str) else repr(self.name)
        if not OPTION_NAME.match(name):
            fixed = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
            hint = f" (did you mean '{fixed}'?)" if OPTION_NAME.match(fixed) else ""
            return f"option name {self.name!r} must be lower-case letters, digits and underscores{hint}"
        if self.type not in OPTION_TYPES:
            return f"option {self.name!r} has type {self.type!r}; use int, float, bool or str"
        if not fits_type(self.default, self.type):
            return (
                f"option {self.name!r} has default {self.default!r}, which is not "
                f"{self.type.__name__}"
            )
        for kind, bound in (("min", self.min), ("max", self.max)):
            if isinstance(bound, str):
                try:
                    dim_names(bound, self.name, "option")
                except ValueError as exc:
                    return f"{exc} ({kind}=)"
            elif bound is not None and (isinstance(bound, bool) or not _is_number(bound)):
                return f"option {self.name!r} has {kind}={bound!r}; give a number or a size's name"
        for kind, bound in (("above", self.above), ("below", self.below)):
            if bound is not None and (isinstance(bound, bool) or not _is_number(bound)):
                return f"option {self.name!r} has {kind}={bound!r}; give a number"
        number = isinstance(self.default, (int, float)) and not isinstance(self.default, bool)
        if number and self.above is not None and not self.default > self.above:
            return f"option {self.name!r} has default {self.default!r}, not above its own above={self.above!r}"
        if number and self.below is not None and not self.default < self.below:
            return f"option {self.name!r} has default {self.default!r}, not below its own below={self.below!r}"
        if number and isinstance(self.min, (int, float)) and self.default < self.min:
            return (
                f"option {self.name!r} has default {self.default!r}, below its own min={self.min!r}"
            )
        if number and isinstance(self.max, (int, float)) and self.default > self.max:
            return (
                f"option {self.name!r} has default {self.default!r}, above its own max={self.max!r}"
            )
        return None

    @property
    def is_identifier(self) -> bool:
        """Whether the name can be a Python keyword argument (``lambda`` cannot)."""
        return not keyword.iskeyword(self.name)


_DEFERRING: list[int] = [0]


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def fits_type(default: Any, kind: type) -> bool:
    """Whether an option's default can be its declared type (None: no default; a whole
    float for an int and an int for a float are the same number)."""
    if default is None:
        return True
    if kind is bool:
        return isinstance(default, bool)
    if isinstance(default, bool):
        return False
    if kind is int:
        return isinstance(default, int) or (isinstance(default, float) and default.is_integer())
    if kind is float:
        return isinstance(default, (int, float))
    return isinstance(default, kind)


def deferring() -> bool:
    return _DEFERRING[0] > 0


@contextmanager
def deferred_declarations() -> Iterator[None]:
    """While a plugin loads: a declaration that cannot work (a bad ``Option``, a bad
    ``Variant`` field) is kept with its problem instead of raising, so the plugin host
    refuses that variant alone and the module's other variants still load. Outside,
    the constructors raise ``ValueError`` as ever."""
    _DEFERRING[0] += 1
    try:
        yield
    finally:
        _DEFERRING[0] -= 1


PARAM_INITS = ("rand", "randn", "linear", "zeros", "ones")
"""How a :class:`Param` the inputs do not give is drawn; None follows ``--init``."""
PARAM_DIMS = ("tokens", "d_in", "d_out", "source_tokens", "d_source")
"""Sizes a :class:`Param`'s shape may name, besides numbers and the variant's int options."""
_DIM_TERM = re.compile(r"[a-z][a-z0-9_]*|[0-9]+|[-+*]|\s+|.")


@dataclass(frozen=True)
class Param:
    """A learnt parameter a variant declares: ``Param("rel_bias", ("2*tokens-1",), "randn")``.

    ``shape`` gives each dimension as a number, a size the run knows (``tokens``, ``d_in``,
    ``d_out``, ``source_tokens``, ``d_source``), one of the variant's ``int`` options, or a
    sum or product of those (``"2*tokens-1"``). An inputs file may give its values in a
    ``params:`` section (checked against this shape); otherwise it is drawn from ``--seed``
    with ``init`` (``rand``, ``randn``, ``linear``, ``zeros``, ``ones``; None follows
    ``--init``). The run reads it as ``run.params["rel_bias"]``.
    """

    name: str
    shape: tuple[int | str, ...]
    init: str | None = None
    help: str = ""
    declared_at: Location | None = field(default=None, compare=False, repr=False)
    """Where the plugin wrote ``Param(...)`` (filled in when it is made)."""
    problem: str | None = field(default=None, compare=False, repr=False)
    """As for :class:`Option`: why the declaration cannot work, kept while a plugin loads."""

    def __post_init__(self) -> None:
        if self.declared_at is None:
            caller = sys._getframe(2)
            object.__setattr__(
                self, "declared_at", Location(caller.f_code.co_filename, caller.f_lineno)
            )
        try:
            self._check()
        except ValueError as exc:
            if not deferring():
                raise
            object.__setattr__(self, "problem", str(exc))

    def _check(self) -> None:
        if not isinstance(self.name, str) or not OPTION_NAME.match(self.name):
            raise ValueError(
                f"parameter name {self.name!r} must be lower-case letters, digits and underscores"
            )
        if isinstance(self.shape, (str, int)):
            object.__setattr__(self, "shape", (self.shape,))
        object.__setattr__(self, "shape", tuple(self.shape))
        for dim in self.shape:
            if isinstance(dim, bool) or not isinstance(dim, (int, str)):
                raise ValueError(
                    f"parameter {self.name!r}: dimension {dim!r} must be a number or a size's name"
                )
            if isinstance(dim, int) and dim < 1:
                raise ValueError(f"parameter {self.name!r}: dimension {dim} must be at least 1")
            if isinstance(dim, str):
                dim_names(dim, self.name)
        if self.init is not None and self.init not in PARAM_INITS:
            raise ValueError(
                f"parameter {self.name!r} has init {self.init!r}"
                f"{did_you_mean(str(self.init), PARAM_INITS)}; use one of {', '.join(PARAM_INITS)}"
            )

    def size_names(self) -> list[str]:
        """The names its shape uses (``tokens``, an option...)."""
        return [n for dim in self.shape if isinstance(dim, str) for n in dim_names(dim, self.name)]

    def resolve(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """Its shape for one run, from the sizes (and int options) by name."""
        return tuple(dim if isinstance(dim, int) else dim_value(dim, sizes) for dim in self.shape)


def dim_names(text: str, param: str, what: str = "parameter") -> list[str]:
    """The names in a dimension like ``2*tokens-1``; a ValueError for anything else."""
    terms = [t for t in _DIM_TERM.findall(text) if not t.isspace()]
    ok = bool(terms) and len(terms) % 2 == 1
    for index, term in enumerate(terms):
        operator = term in "-+*" and len(term) == 1
        if (index % 2 == 1) != operator or not (operator or term[0].isalnum()):
            ok = False
    if not ok:
        raise ValueError(
            f"{what} {param!r}: {'dimension' if what == 'parameter' else 'bound'} {text!r} "
            "must be a number, a size's name "
            f"({', '.join(PARAM_DIMS)} or an int option) or a sum or product of them"
        )
    return [t for t in terms if t[0].isalpha()]


def dim_value(text: str, sizes: Mapping[str, int]) -> int:
    """``2*tokens-1`` with ``tokens`` from ``sizes``: products first, then sums."""
    terms = [t for t in _DIM_TERM.findall(text) if not t.isspace()]
    total, product, sign = 0, 1, 1
    for index, term in enumerate(terms):
        if index % 2 == 0:
            product *= int(term) if term.isdigit() else int(sizes[term])
        elif term == "*":
            continue
        else:
            total += sign * product
            product, sign = 1, (1 if term == "+" else -1)
    return total + sign * product
