"""attention-tracer: step through self-attention, stage by stage.

What a plugin author needs is importable from here::

    from tracer import RunContext, Variant, hookimpl, stage, substep

Importing this package must stay cheap: it never imports torch (the TUI
paints its first frame while torch loads in the background).
"""

from tracer.hookspecs import hookimpl
from tracer.variant import (
    Accumulate,
    Dot,
    Option,
    RunContext,
    Stage,
    SubStep,
    Variant,
    Weights,
    stage,
    substep,
)

__version__ = "0.2.0"

__all__ = [
    "Accumulate",
    "Dot",
    "Option",
    "RunContext",
    "Stage",
    "SubStep",
    "Variant",
    "Weights",
    "__version__",
    "hookimpl",
    "stage",
    "substep",
]
