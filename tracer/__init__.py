"""attention-tracer: step through self-attention, stage by stage.

What a plugin author needs is importable from here::

    from tracer import RunContext, Variant, hookimpl, stage, substep

Importing this package must stay cheap: it never imports torch (the TUI
paints its first frame while torch loads in the background).
"""

from typing import TYPE_CHECKING, Any

from tracer.hookspecs import hookimpl
from tracer.variant import (
    Accumulate,
    AddBias,
    Cost,
    Difference,
    Dot,
    Elementwise,
    MatMul,
    Mistake,
    Option,
    Param,
    RunContext,
    Sizes,
    Stage,
    SubStep,
    Sum,
    Variant,
    Weights,
    stage,
    substep,
)

if TYPE_CHECKING:
    from tracer.notebook import trace

__version__ = "0.3.0"


def __getattr__(name: str) -> Any:
    # ``from tracer import trace`` (for notebooks) loads its module only when asked for:
    # the HTML code and the tracer stay off `import tracer` and so off `attn --help`.
    if name == "trace":
        from tracer.notebook import trace

        return trace
    raise AttributeError(f"module 'tracer' has no attribute {name!r}")


__all__ = [
    "Accumulate",
    "AddBias",
    "Cost",
    "Difference",
    "Dot",
    "Elementwise",
    "MatMul",
    "Mistake",
    "Option",
    "Param",
    "RunContext",
    "Sizes",
    "Stage",
    "SubStep",
    "Sum",
    "Variant",
    "Weights",
    "__version__",
    "hookimpl",
    "stage",
    "substep",
    "trace",
]
