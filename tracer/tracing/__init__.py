"""Running a variant step by step while recording what ran and what it produced."""

from tracer.tracing.trace import Trace, VariantRunError

__all__ = ["Trace", "VariantRunError"]
