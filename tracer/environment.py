"""Reading the ``ATTN_*`` settings that are numbers (time and memory limits)."""

from __future__ import annotations

import os

from tracer.errors import UsageError


def env_number(name: str, default: float) -> float:
    """The number in environment variable ``name``, ``default`` when unset or blank.

    Anything else is a usage error naming the variable, so a typo in a limit is
    reported, never silently replaced by the default.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{name}={text!r} is not a number") from None
