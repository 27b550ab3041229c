"""``python -m tracer`` is ``attn``."""

from tracer.cli.main import run

run()
