"""A module-level app, for Textual's development tools::

    pip install textual-dev
    textual console                       # in one terminal: logs and print() output
    textual run --dev tracer.tui.dev:app  # in another: the lesson picker, live CSS reload

``ATTN_DEV_VARIANT=masked`` opens the explorer on that variant instead.
"""

from __future__ import annotations

import os

from tracer.tui.app import TracerApp
from tracer.tui.launch import make_explore_app, make_picker_app


def make_dev_app() -> TracerApp:
    variant = os.environ.get("ATTN_DEV_VARIANT")
    if variant:
        # Here, not at the top: the explorer's modules load only when asked for.
        from tracer.session.explore import TraceOptions

        return make_explore_app(variant, TraceOptions())
    return make_picker_app()


app = make_dev_app()
