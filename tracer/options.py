"""Checking the values users give a variant's declared options.

Values arrive as text from the command line (``-o window=3``) or typed from a
lesson's ``options:`` mapping. Both are checked here, before the variant runs,
so a bad value is a usage error that names where it came from, never a plugin
failure halfway through a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from tracer.errors import UsageError
from tracer.suggest import did_you_mean
from tracer.variant import Option, RunContext, Variant, dim_value

MIN_SEED, MAX_SEED = -(2**63), 2**63 - 1
"""What ``torch.manual_seed`` accepts."""
MAX_D_OUT = 4096
INITS = ("rand", "randn", "linear")
"""How trainable weights are made (:func:`tracer.inputs.weights.make_weights`)."""

TRACE_OPTIONS = (
    Option("seed", int, 123, "the random seed of the weights and dropout", MIN_SEED, MAX_SEED),
    Option("init", str, "rand", "how the weights are made", choices=INITS),
    Option("d_out", int, 2, "columns of the query, key and value weights", 1, MAX_D_OUT),
    Option("dropout", float, 0.0, "the share of weights dropped (at least 0, below 1)", 0.0),
)
"""The options every trace takes, declared like a variant's: one set of bounds for the
command line (``--d-out``), lessons (``options: {d_out: ...}``) and ``tracer.trace(...)``."""

HEADS = Option("heads", int, 2, "attention heads, for the multi-head variants", 1)
"""``heads``, declared for the variants that do not declare it themselves (see below)."""
LEGACY = (HEADS,)
"""Options every variant was passed before variants declared theirs, declared like a
variant's own. A variant that declares the option checks it by its own declaration; one
that declares no options at all is still passed it, checked by this one (plugins written
before options existed read ``run.extra["heads"]``); one that declares other options but
not this one is not for it: a lesson's ``heads`` is left out of its runs, as it always was."""
LEGACY_OPTIONS = frozenset(option.name for option in LEGACY)
"""The names of :data:`LEGACY`."""
TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0"})

Where = Callable[[str], str]
"""How to name the place an option came from in a message, e.g. ``-o window``."""


def cli_where(name: str) -> str:
    return f"-o {name}"


def flag_where(flags: tuple[str, ...]) -> Where:
    """Name an option as it was typed: ``--heads`` for a shorthand flag, else ``-o NAME``."""

    def where(name: str) -> str:
        flag = "--" + name.replace("_", "-")
        return flag if flag in flags else cli_where(name)

    return where


def check_trace_option(name: str, value: Any, where: str) -> Any:
    """A trace option (seed, init, d_out, dropout) as its type, within its bounds.

    The one validator of these options: ``where`` is how the user wrote the name
    (``--d-out`` on the command line, ``d_out`` in a lesson), so the same rule
    reads in the user's own words wherever it is broken.
    """
    option = next(option for option in TRACE_OPTIONS if option.name == name)
    if name == "init" and value not in INITS:
        raise UsageError(
            f"unknown {where} '{value}'{did_you_mean(str(value), INITS)}; "
            f"choose one of {', '.join(INITS)}"
        )
    if name == "seed" and isinstance(value, int) and not MIN_SEED <= value <= MAX_SEED:
        raise UsageError(
            f"{where} must be a 64-bit integer, between {MIN_SEED} and {MAX_SEED}, got {value}"
        )
    if name == "dropout" and isinstance(value, (int, float)) and not 0.0 <= value < 1.0:
        raise UsageError(f"{where} must be at least 0 and below 1, got {value:g}")
    return convert(option, value, where)


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """``["window=3", "causal=true"]`` from repeated ``-o`` flags, as a name -> text mapping."""
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise UsageError(f"-o expects NAME=VALUE, got '{pair}'")
        values[name] = value.strip()
    return values


def describe(option: Option) -> str:
    """One line for ``--help`` style listings: ``window (int, default 2, >= 1): help``."""
    facts = [
        option.type.__name__,
        "optional" if option.optional else f"default {_show(option.default)}",
    ]
    if option.choices:
        facts.append("one of " + ", ".join(_show(c) for c in option.choices))
    if option.min is not None:
        facts.append(f">= {_show(option.min)}")
    if option.above is not None:
        facts.append(f"> {_show(option.above)}")
    if option.max is not None:
        facts.append(f"<= {_show(option.max)}")
    if option.below is not None:
        facts.append(f"< {_show(option.below)}")
    text = f"{option.name} ({', '.join(facts)})"
    return f"{text}: {option.help}" if option.help else text


def check_options(
    variant: Variant, values: Mapping[str, Any], where: Where = cli_where
) -> dict[str, Any]:
    """Every declared option of ``variant``, from ``values`` or its default, checked.

    A variant that declares no options gets ``heads`` as it is: plugins written
    before options existed read ``run.extra["heads"]`` themselves, and
    ``--heads`` was accepted for every variant.
    """
    if not variant.options:
        others = [name for name in values if name not in LEGACY_OPTIONS]
        if others:
            raise UsageError(f"{where(others[0])}: variant '{variant.name}' takes no options")
        return {
            name: convert(legacy_option(name), value, where(name), variant.name)
            for name, value in values.items()
        }
    known = [option.name for option in variant.options]
    checked: dict[str, Any] = {}
    for name, value in values.items():
        option = variant.option(name)
        if option is None:
            raise UsageError(
                f"{where(name)}: variant '{variant.name}' has no option '{name}'"
                f"{did_you_mean(name, known)}; it takes {', '.join(known)}"
            )
        checked[name] = convert(option, value, where(name), variant.name)
    for option in variant.options:
        checked.setdefault(option.name, option.default)
    return checked


def legacy_option(name: str) -> Option:
    """The declaration of a legacy option (``heads``) for a variant that does not declare it."""
    return next(option for option in LEGACY if option.name == name)


def option_for(variant: Variant, name: str) -> Option | None:
    """The declaration that checks option ``name`` for ``variant``: its own, else the legacy
    one when ``variant`` declares no options at all; None when the option is not for it."""
    own = variant.option(name)
    if own is not None or variant.options or name not in LEGACY_OPTIONS:
        return own
    return legacy_option(name)


def convert(option: Option, value: Any, where: str, variant: str = "") -> Any:
    """``value`` as the option's type, within its bounds, or a UsageError naming ``where``."""
    typed = _as_type(option, value, where)
    if option.choices is not None and typed not in option.choices:
        choices = ", ".join(_show(c) for c in option.choices)
        suggestion = did_you_mean(str(typed), [str(c) for c in option.choices])
        raise UsageError(
            f"{where}: '{_show(typed)}' is not allowed{suggestion}; choose one of {choices}"
        )
    if isinstance(option.min, (int, float)) and typed < option.min:
        raise UsageError(f"{where} must be at least {_show(option.min)}, got {_show(typed)}")
    if isinstance(option.max, (int, float)) and typed > option.max:
        raise UsageError(f"{where} must be at most {_show(option.max)}, got {_show(typed)}")
    if option.above is not None and not typed > option.above:
        raise UsageError(f"{where} must be above {_show(option.above)}, got {_show(typed)}")
    if option.below is not None and not typed < option.below:
        raise UsageError(f"{where} must be below {_show(option.below)}, got {_show(typed)}")
    if option.type is int and not MIN_SEED <= typed <= MAX_SEED:  # torch takes 64 bits
        raise UsageError(
            f"{where} must be a 64-bit integer, between {MIN_SEED} and {MAX_SEED}, got "
            f"{_show(typed) if len(str(typed)) <= 40 else f'a number of {len(str(typed))} digits'}"
        )
    return typed


def run_sizes(context: RunContext) -> dict[str, int]:
    """The sizes a run knows (``tokens``, ``d_in``, ``d_out``, the source's) and its int
    options: what an option's bound (``max="tokens"``) or a parameter's shape may name."""
    sizes = {
        "tokens": int(context.inputs.shape[0]),
        "d_in": int(context.inputs.shape[1]) if context.inputs.dim() > 1 else 0,
    }
    if context.d_out is not None:
        sizes["d_out"] = context.d_out
    if context.source is not None:
        sizes["source_tokens"] = int(context.source.inputs.shape[0])
        sizes["d_source"] = int(context.source.inputs.shape[1])
    for name, value in context.options.items():
        if isinstance(value, int) and not isinstance(value, bool):
            sizes.setdefault(name, value)
    return sizes


def check_sized_bounds(variant: Variant, context: RunContext) -> None:
    """The bounds the inputs decide (``Option("k", int, 2, max="tokens")``), checked once the
    inputs are known, before the variant runs: a UsageError naming the option otherwise."""
    sized = [(option, bound) for option in variant.options for bound in option.sized_bounds()]
    if not sized:
        return
    sizes = run_sizes(context)
    for option, (kind, text) in sized:
        value = context.options.get(option.name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue  # an optional option left out, or a bound on a text option
        try:
            limit = dim_value(text, sizes)
        except KeyError:
            continue  # a size this run does not have (d_out without weights)
        low = kind == "min"
        if (value < limit) if low else (value > limit):
            shown = f"{text} ({limit})"
            raise UsageError(
                f"option '{option.name}' of variant '{variant.name}' must be "
                f"{'at least' if low else 'at most'} {shown} for these inputs, got {_show(value)}"
            )


def _as_type(option: Option, value: Any, where: str) -> Any:
    kind = option.type
    wanted = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}[kind]
    if isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        if kind is bool:
            if text in TRUE_WORDS:
                return True
            if text in FALSE_WORDS:
                return False
        else:
            try:
                number = float(text) if kind is float else int(text, 10)
            except ValueError:
                number = None
            if number is not None and math.isfinite(number):
                return number
        raise UsageError(f"{where} must be {wanted}, got '{value}'")
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif isinstance(value, str):
        return value
    raise UsageError(f"{where} must be {wanted}, got {_show(value)}")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
