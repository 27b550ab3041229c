"""The explorer's session: a variant stepped through without a lesson. No Textual.

:func:`explore_loader` loads the plugins and starts a variant under a
:class:`~tracer.tracing.stepper.Stepper`, which numbers its stages and loop
sub-steps so a front end can step forwards and back on a run that only goes
forwards. The app's explorer and ``attn explore --plain`` both start here, and
front ends take what they draw with from here, never from the tracing below::

    from tracer.session.explore import TraceOptions, explore_loader
    session = explore_loader("naive-loop", TraceOptions())
    first = session.stepper.get(0)           # a Stage or a SubStep
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, build_context, resolve_inputs
from tracer.tracing.stepper import Cancelled, LoopCanvas, Stepper, cell_of
from tracer.variant import Variant

if TYPE_CHECKING:
    import torch

__all__ = [
    "Cancelled",
    "ExploreSession",
    "LoopCanvas",
    "Stepper",
    "TraceOptions",
    "accumulated",
    "cell_of",
    "explore_loader",
]


@dataclass
class ExploreSession:
    """A running variant: what the loader hands to a front end."""

    variant: Variant
    stepper: Stepper
    query: int | None = None
    warnings: tuple[str, ...] = ()
    variant_names: tuple[str, ...] = ()


def explore_loader(
    variant: str,
    options: TraceOptions,
    plugin_dirs: list[str] | tuple[str, ...] = (),
    host: PluginHost | None = None,
) -> ExploreSession:
    """Load the plugins (unless ``host`` has) and start ``variant`` (in a worker: imports torch)."""
    if host is None:
        host = PluginHost(plugin_dirs)
    found = host.variant(variant)
    inputs = resolve_inputs(options.inputs, found)
    context = build_context(inputs, options, variant=found)
    stepper = Stepper(lambda: host.start(variant, context))
    warnings = tuple(
        f"plugin '{record.name}' failed: {record.error} (see 'attn plugins')"
        for record in host.failures
    )
    return ExploreSession(found, stepper, context.query, warnings, tuple(sorted(host.variants)))


def accumulated(
    before: torch.Tensor, weight: torch.Tensor, value: torch.Tensor
) -> torch.Tensor | None:
    """``before + weight × value`` as a declared accumulation computes it (None: no fit)."""
    # Here, not at the top: the checks import torch, and the app imports this module before
    # its first frame.
    from tracer.tracing.checks import accumulated as compute

    return compute(before, weight, value)
