"""Where a loop is, in words: kept here for code that imported it from the app's package.

The words are the session's (:func:`tracer.session.places.loop_noun`, ``loop_place``).
"""

from __future__ import annotations

from tracer.session.places import loop_noun, loop_place

__all__ = ["loop_noun", "loop_place"]
