"""The hooks a plugin can implement, and the markers used to declare them.

A plugin is any module with functions decorated by :data:`hookimpl`. It is
found through the ``attention_tracer`` entry-point group, or as a single
``.py`` file in a folder given with ``--plugins-dir`` / ``ATTN_PLUGINS_DIR``.
The built-in variants in ``plugins/`` use exactly this mechanism.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from tracer.variant import Variant

PROJECT_NAME = "attention_tracer"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a plugin's ``register_variants(register)`` function as its hook::

    @hookimpl
    def register_variants(register):
        register(Variant(name="banded", title="...", run=banded, stages=("scores",)))
"""


@hookspec
def register_variants(register: Callable[[Variant], None]) -> None:
    """Register attention variants by calling ``register(Variant(...))``.

    Called once per plugin when the host starts. A plugin may register any
    number of variants; variant names must be unique across all plugins.
    An exception raised here marks this plugin as failed and leaves every
    other plugin working.
    """
