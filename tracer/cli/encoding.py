"""Output a terminal cannot encode falls back to ASCII spellings, never to a traceback.

``PYTHONIOENCODING=latin-1`` or an old Windows console cannot print ω, α, √
or ×. Rather than fail mid-output with ``UnicodeEncodeError``, such
characters are written the way one types them in ASCII (``w``, ``a``,
``sqrt``, ``x``), and anything else unprintable becomes ``?``.
"""

from __future__ import annotations

import codecs
import sys

SPELLINGS = {
    "ω": "w",
    "α": "a",
    "Σ": "sum",
    "√": "sqrt ",
    "×": "x",
    "·": "*",
    "ᵀ": "^T",
    "⊙": "(.)",
    "…": "...",
    "–": "-",
    "—": "-",
    "→": "->",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "“": '"',
    "”": '"',
    "‘": "'",
    "’": "'",
}
HANDLER = "attn-ascii"


def _spell(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(SPELLINGS.get(c, "?") for c in bad), error.end


def use_ascii_fallback() -> None:
    """Make stdout and stderr spell out what their encoding cannot hold."""
    codecs.register_error(HANDLER, _spell)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "ω×√".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            if reconfigure is not None:
                reconfigure(errors=HANDLER)
