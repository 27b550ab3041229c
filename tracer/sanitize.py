"""The one way text from files and plugins reaches a terminal: control characters made visible.

A token in an inputs file, a lesson's prose, a plugin's name, message or
printing is text we did not write. Written raw, an escape sequence in it can
set the terminal's title, clear the screen, hide the cursor or write the
clipboard (OSC 52). :func:`visible` replaces every character a terminal would
act on with a picture of it, so the reader sees what the file holds and the
terminal does nothing:

* C0 controls and DEL become their Unicode control pictures (ESC is ``␛``,
  BEL ``␇``, CR ``␍``); newline and tab are kept where the text may span lines;
* C1 controls (U+0080-U+009F, of which U+009B is a one-byte CSI) and the bidi
  embedding, override and isolate characters (which reorder what is shown, so a
  line could read differently from what it holds) become ``<U+XXXX>``.

``--json`` output needs none of this: JSON escapes control characters itself.
"""

from __future__ import annotations

import re
import unicodedata

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _table(multiline: bool) -> dict[int, str]:
    table = {code: chr(0x2400 + code) for code in range(0x20)}
    table[0x7F] = "\u2421"
    for code in (*range(0x80, 0xA0), *_BIDI):
        table[code] = f"<U+{code:04X}>"
    if multiline:
        del table[ord("\n")], table[ord("\t")]
    return table


_MULTILINE = _table(multiline=True)
_ONE_LINE = _table(multiline=False)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_MULTILINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

MESSAGE_LIMIT = 4000
"""Characters of one error message shown; a plugin's 50 MB message is cut to this."""


def visible(text: str, *, multiline: bool = True) -> str:
    """``text`` with every control character shown as a visible picture, never emitted.

    ``multiline`` keeps newlines and tabs (prose, a rendered table); a token or
    a name that must stay on one line passes ``multiline=False``.
    """
    if multiline:
        if _UNSAFE_MULTILINE.search(text) is None:
            return text
        return text.translate(_MULTILINE)
    if _UNSAFE.search(text) is None:
        return text
    return text.translate(_ONE_LINE)


def message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """An error message for the terminal: cut to ``limit`` characters, then made visible."""
    if len(text) > limit:
        cut = len(text) - limit
        text = f"{text[:limit]}… ({cut:,} more characters not shown)"
    return visible(text)


LABEL_LIMIT = 24
"""Display columns of a token label in a table; a longer one is cut, ending in "…"."""


def _char_width(char: str) -> int:
    """Columns a terminal gives one character: 0 for combining marks and format characters
    (joiners, variation selectors), 2 for wide and full-width ones (CJK, most emoji), else 1."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    if "\u1160" <= char <= "\u11ff":  # Hangul medial vowels and finals join the syllable before
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (text already made :func:`visible`)."""
    if text.isascii():
        return len(text)
    return sum(_char_width(char) for char in text)


def clip(text: str, limit: int = LABEL_LIMIT) -> str:
    """``text`` cut to at most ``limit`` display columns, ending in "…" where it was cut."""
    if len(text) <= limit and display_width(text) <= limit:
        return text
    kept, used = [], 0
    for char in text:
        width = _char_width(char)
        if used + width > limit - 1:
            break
        kept.append(char)
        used += width
    return "".join(kept) + "…"


def pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` display columns (on the left when ``right``)."""
    spaces = " " * max(0, width - display_width(text))
    return spaces + text if right else text + spaces


_PENDING: list[str] = []
"""Warnings caught by :func:`keep_warnings`, each one line, not yet shown."""


def _keep_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    first = str(message).strip().splitlines()
    summary = f"{category.__name__}: {first[0] if first else ''}".rstrip(": ")
    text = visible(f"attn: warning: {summary}"[:MESSAGE_LIMIT], multiline=False)
    if text not in _PENDING:
        _PENDING.append(text)


def keep_warnings() -> None:
    """From now on a warning (torch's, a plugin's) is kept as one sanitised line, never
    written raw: :func:`take_warnings` hands them over when the command went well, and a
    command that ends in a one-line error drops them (:func:`drop_warnings`)."""
    import warnings

    warnings.showwarning = _keep_warning


def take_warnings() -> list[str]:
    """The warnings kept so far (each once), forgotten here."""
    taken = list(_PENDING)
    _PENDING.clear()
    return taken


def drop_warnings() -> None:
    _PENDING.clear()


__all__ = [
    "LABEL_LIMIT",
    "MESSAGE_LIMIT",
    "clip",
    "display_width",
    "drop_warnings",
    "keep_warnings",
    "message",
    "pad",
    "take_warnings",
    "visible",
]
