"""Kept so that ``from tracer.runner import start_trace`` (notebooks and scripts written before
the move) keeps working: the code lives in :mod:`tracer.tracing.runner`."""

import sys

from tracer.tracing import runner as _runner

sys.modules[__name__] = _runner
