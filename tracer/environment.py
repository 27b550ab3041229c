"""Reading limits (time and memory) from flags and ``ATTN_*`` settings, in one place.

Every limit goes through :func:`parse_limit`, so every one says the same thing about a
bad value, in one line naming the flag or variable. ``inf`` (or ``infinity``) means no
limit where a limit may be lifted; it is kept as a finite number far beyond any run
(:data:`NO_TIME_LIMIT` seconds, :data:`NO_MEMORY_LIMIT_MB` MiB), which every timer, every
``select`` and ``setrlimit`` accept. ``nan``, values below a limit's minimum and finite
values beyond those bounds are refused.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from tracer.errors import UsageError

NO_TIME_LIMIT = 1_000_000_000.0
"""Seconds that stand for "no time limit" (about 31 years)."""
NO_MEMORY_LIMIT_MB = 2**40
"""MiB that stand for "no memory limit" (an exbibyte: beyond any machine)."""
UNLIMITED = frozenset({"inf", "+inf", "infinity", "+infinity"})


@dataclass(frozen=True)
class Limit:
    """What a limit accepts: a unit, a least value (``above``: strictly greater), whether
    it is a whole number, and whether ``inf`` may lift it."""

    unit: str
    least: float
    above: bool = False
    whole: bool = False
    unlimited: bool = True

    @property
    def most(self) -> float:
        return NO_MEMORY_LIMIT_MB if self.whole else NO_TIME_LIMIT

    def describe(self) -> str:
        least = f"above {self.least:g}" if self.above else f"at least {self.least:g}"
        kind = "a whole number of" if self.whole else "a number of"
        text = f"{kind} {self.unit} {least} and at most {self.most:,.0f}"
        return text + (", or inf for no limit" if self.unlimited else "")


SECONDS = Limit("seconds", 0, above=True)
MEBIBYTES = Limit("MiB", 64, whole=True)


def parse_limit(name: str, text: str, kind: Limit) -> float:
    """The limit ``text`` gives (``name`` is the flag or variable, for the message)."""
    cleaned = text.strip().lower().replace("_", "")
    if kind.unlimited and cleaned in UNLIMITED:
        return kind.most
    try:
        value = float(cleaned)
    except ValueError:
        value = math.nan
    fits = (
        math.isfinite(value)
        and (value > kind.least if kind.above else value >= kind.least)
        and value <= kind.most
        and (not kind.whole or value.is_integer())
    )
    if not fits:
        raise UsageError(f"{name} must be {kind.describe()}, got {text.strip()!r}")
    return int(value) if kind.whole else value


def env_limit(name: str, default: float, kind: Limit) -> float:
    """The limit in environment variable ``name``; ``default`` when unset or blank."""
    text = os.environ.get(name, "").strip()
    return parse_limit(name, text, kind) if text else default


def env_number(name: str, default: float) -> float:
    """The number in environment variable ``name``, ``default`` when unset or blank.

    Anything else is a usage error naming the variable, so a typo in a limit is
    reported, never silently replaced by the default.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{name}={text!r} is not a number") from None
    if math.isnan(value):
        raise UsageError(f"{name}={text!r} is not a number")
    return value
