"""Kept for plugins that imported the built-ins' private dropout module: use :mod:`tracer.dropout`."""

from tracer.dropout import dropout, keep_mask

__all__ = ["dropout", "keep_mask"]
