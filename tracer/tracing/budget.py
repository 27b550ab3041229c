"""Refusing a run past a limit from the cost its variant declares, before any tensor is made.

A variant may declare ``Variant(cost=...)``: from the run's :class:`~tracer.variant.Sizes`
(tokens, widths, options, the focused query) a :class:`~tracer.variant.Cost` saying how many
sub-steps its longest loop makes, how many numbers it holds and yields, and how large its
options make a number. :func:`check_cost` compares each with its limit and raises a one-line
:class:`~tracer.errors.UsageError` (exit status 2) naming what to change. The limits checked
while a run goes on (``tracer.tracing.trace.MAX_SUBSTEPS_PER_LOOP``, the size of one
tensor, the worker's time and memory) still hold for every variant, with a cost or without.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import fields, replace

from tracer.errors import Location, PluginError, UsageError
from tracer.options import MAX_D_OUT
from tracer.tracing import trace as _trace
from tracer.variant import RESERVED_OPTIONS, Cost, Sizes, Variant

MAX_HELD_NUMBERS = 2**28
"""The most numbers a run may hold at once: one 16,384-token score table, 1 GiB of float32
(``backward`` keeps four or five tokens x tokens tables: up to 7,327 tokens)."""
MAX_LOOP_VALUES = 2**29
"""The most numbers a run's sub-steps may yield in all (each is checked, copied and may be
drawn: this is the time a loop takes; ``flash-backward`` over 8,192 tokens yields 2^28)."""
FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32 (the tensors' type): a number past it is ``inf``."""
BYTES_PER_NUMBER = 4
QUERY_ADVICE = "follow one query (--query, a lesson's query:)"

Namer = Callable[[str], str]


def check_cost(
    variant: Variant,
    sizes: Sizes,
    option_name: Namer,
    trace_option_name: Namer,
    memory_left: int | None = None,
    memory_why: str = "",
) -> Cost | None:
    """The cost ``variant`` declares for ``sizes``; a UsageError if it is past a limit.

    ``option_name`` names a variant option as the user wrote it (``-o tile``, ``--heads``),
    ``trace_option_name`` a shared one (``--d-out``). ``memory_left`` is what the run may
    still allocate, in bytes (None: no limit known), and ``memory_why`` says which limit."""
    if variant.cost is None:
        return None
    cost = declared_cost(variant, sizes)
    for measure in ("largest", "substeps", "table", "values", "elements", "memory"):
        said = _past(measure, cost, memory_left, memory_why)
        if said is not None:
            what, limit = said
            advice, named = _advice(
                variant,
                sizes,
                cost,
                measure,
                (option_name, trace_option_name),
                (memory_left, memory_why),
            )
            raise UsageError(
                f"variant '{variant.name}' over {sizes.tokens:,} "
                f"token{'s' * (sizes.tokens != 1)}{_with(named, sizes)} {what}; {limit}: {advice}"
            )
    return cost


def declared_cost(variant: Variant, sizes: Sizes) -> Cost:
    """``variant.cost(sizes)``, checked: a cost function that fails is the plugin's failure."""
    from tracer.tracing.containment import PluginExit, contained

    function = variant.cost
    assert function is not None
    code = getattr(function, "__code__", None)
    where = (
        Location(code.co_filename, code.co_firstlineno)
        if code is not None
        else variant.declared_at or Location("")
    )
    try:
        with contained():
            cost = function(sizes)
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit, PluginExit) as exc:
        raise PluginError(
            f"variant '{variant.name}': its cost= function failed: {type(exc).__name__}: {exc}",
            where,
        ) from exc
    if not isinstance(cost, Cost):
        raise PluginError(
            f"variant '{variant.name}': its cost= function returned {type(cost).__name__}, "
            "not a Cost",
            where,
        )
    for item in fields(Cost):
        value = getattr(cost, item.name)
        if item.name in ("larger", "smaller"):
            ok = isinstance(value, tuple) and all(isinstance(name, str) for name in value)
        elif item.name == "largest":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            ok = ok and not math.isnan(value)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        if not ok:
            raise PluginError(
                f"variant '{variant.name}': its cost= function returned {item.name}="
                f"{value!r}; it must be "
                + (
                    "a tuple of option names"
                    if item.name in ("larger", "smaller")
                    else "a number"
                    if item.name == "largest"
                    else "a whole number from 0"
                ),
                where,
            )
    return cost


def _past(
    measure: str, cost: Cost, memory_left: int | None, memory_why: str
) -> tuple[str, str] | None:
    """(what the run would do, the limit) when ``measure`` of ``cost`` is past its limit."""
    if measure == "largest":
        largest = abs(float(cost.largest))
        if largest <= FLOAT32_MAX:
            return None
        reach = f"{largest:.3g}" if math.isfinite(largest) else "beyond any float"
        return f"would make numbers of {reach}", f"the largest float32 is {FLOAT32_MAX:.4g}"
    most = _trace.MAX_SUBSTEPS_PER_LOOP  # read here: the one limit, checked while a loop runs too
    if measure == "substeps" and cost.substeps > most:
        return f"would make {cost.substeps:,} sub-steps in one loop", f"the limit is {most:,}"
    if measure == "table":
        from tracer.tracing.checks import MAX_ELEMENTS  # imports torch, as the run is about to

        if cost.table > MAX_ELEMENTS:
            return (
                f"would make a tensor of {cost.table:,} numbers",
                f"one step may show at most {MAX_ELEMENTS:,}",
            )
    if measure == "values" and cost.values > MAX_LOOP_VALUES:
        return (
            f"would yield {cost.values:,} numbers in its sub-steps",
            f"the limit is {MAX_LOOP_VALUES:,}",
        )
    if measure == "elements" and cost.elements > MAX_HELD_NUMBERS:
        return (
            f"would hold {cost.elements:,} numbers ({_bytes(cost.elements * BYTES_PER_NUMBER)})",
            f"the limit is {MAX_HELD_NUMBERS:,} ({_bytes(MAX_HELD_NUMBERS * BYTES_PER_NUMBER)})",
        )
    needed = cost.elements * BYTES_PER_NUMBER
    if measure == "memory" and memory_left is not None and needed > memory_left:
        return (
            f"would hold {cost.elements:,} numbers ({_bytes(needed)})",
            f"it may allocate {_bytes(max(memory_left, 0))} more ({memory_why})",
        )
    return None


def _advice(
    variant: Variant,
    sizes: Sizes,
    cost: Cost,
    measure: str,
    names: tuple[Namer, Namer],
    memory: tuple[int | None, str],
) -> tuple[str, list[str]]:
    """What to change, and the options it names: each option the cost names whose furthest
    value in that direction brings the run under the limit, then tokens and the query."""
    option_name, trace_option_name = names

    def helps(changed: Sizes) -> bool:
        try:
            other = declared_cost(variant, changed)
        except PluginError:
            return False
        return _past(measure, other, *memory) is None

    parts, named = [], []
    for larger, options in ((True, cost.larger), (False, cost.smaller)):
        for option in options:
            changed = _furthest(variant, sizes, option, larger)
            if changed is None or helps(changed):
                name = (trace_option_name if option in RESERVED_OPTIONS else option_name)(option)
                parts.append(f"a {'larger' if larger else 'smaller'} {name}")
                named.append(option)
    if sizes.tokens > 1 and helps(replace(sizes, tokens=1, query=None)):
        parts.append("fewer tokens")
    if sizes.query is None and helps(replace(sizes, query=0)):
        parts.append(QUERY_ADVICE)
    if not parts:
        return "no option of this variant brings it under the limit", named
    listed = ", ".join(parts[:-1]) + (" or " if len(parts) > 1 else "") + parts[-1]
    return ("give " if not listed.startswith("follow") else "") + listed, named


def _furthest(variant: Variant, sizes: Sizes, option: str, larger: bool) -> Sizes | None:
    """``sizes`` with ``option`` at the furthest value it may take in that direction (its
    declared bound, else a million times further); None when it is not a number."""
    if option == "d_out":
        return replace(sizes, d_out=MAX_D_OUT if larger else 1)
    value = sizes.options.get(option)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    declared = variant.option(option)
    bound = None if declared is None else (declared.max if larger else declared.min)
    if bound is None:
        bound = value * 2**20 if larger else (value / 2**20 if isinstance(value, float) else 1)
    if isinstance(value, int):
        bound = int(bound)
    return replace(sizes, options={**sizes.options, option: bound})


def _with(named: list[str], sizes: Sizes) -> str:
    shown = [
        f"{name}={_show(sizes.options.get(name, sizes.d_out))}"
        for name in dict.fromkeys(named)
        if name in sizes.options or name == "d_out"
    ]
    if not shown:
        return ""
    return " with " + (", ".join(shown[:-1]) + " and " if len(shown) > 1 else "") + shown[-1]


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _bytes(count: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:,.2f} {unit}"
    return f"{count} bytes"


def address_space_left() -> int | None:
    """Bytes this process may still map under its address-space limit (``ulimit -v``);
    None where there is no such limit or it cannot be read."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[0])
        return int(soft) - pages * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        return None
