"""The built-in attention variants.

Each module here is an ordinary plugin, registered through the
``attention_tracer`` entry-point group like any third-party one; read them as
examples. Installed, this folder becomes ``tracer.builtin_plugins``.
"""
