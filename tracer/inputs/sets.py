"""What an input set holds: tokens, embeddings, optional weights, parameters and a source.

Only data here (no parsing, no torch): the built-in sets (:mod:`tracer.inputs.builtin`)
and the file reader (:mod:`tracer.inputs.input_set`) both build on it, so neither
imports the other in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tracer.errors import Location

Matrix = tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class ParamValue:
    """A learnt parameter an inputs file gives (``params:``), by its shape and values."""

    shape: tuple[int, ...]
    values: tuple[float, ...]
    """Row-major, ``prod(shape)`` numbers."""
    where: Location | None = field(default=None, compare=False)
    """Where the file gives it, for messages that say it does not fit the variant."""
    name_at: Location | None = field(default=None, compare=False)
    """Where the file names it (the key), for an unknown name."""


@dataclass(frozen=True)
class SourceSequence:
    """A second sequence (an encoder's output, a sentence to translate): keys and values
    of cross-attention come from it, queries from the main sequence."""

    tokens: tuple[str, ...]
    embeddings: Matrix
    weights: Mapping[str, Matrix] | None = None
    """``key`` and ``value``, each (source width, d_out), when the file gives them."""

    @property
    def d_in(self) -> int:
        return len(self.embeddings[0])


@dataclass(frozen=True)
class InputSet:
    """Tokens and their embeddings, validated: rectangular, finite, one row per token.

    ``embeddings`` is empty when the inputs give tokens alone."""

    name: str
    tokens: tuple[str, ...]
    embeddings: Matrix
    weights: Mapping[str, Matrix] | None = None
    padding: tuple[bool, ...] | None = None
    description: str = ""
    source: str = "built-in"
    """Where the set came from (a file's path); see ``source_sequence`` for a second sequence."""
    source_sequence: SourceSequence | None = None
    """The ``source:`` section: a second sequence with its own tokens and width."""
    params: Mapping[str, ParamValue] | None = None
    """The ``params:`` section: a variant's own learnt parameters by name, checked against
    what the variant declares (``Variant(params=...)``) when it runs."""
    text: str | None = None
    """The text the tokens come from (``--text``, a file's ``text:``), for a variant that
    tokenizes it with its own tokenizer (``Variant(tokenize=...)``); its tokens are then
    that variant's split of the text."""

    @property
    def d_in(self) -> int:
        return len(self.embeddings[0]) if self.embeddings else 0

    @property
    def d_out(self) -> int | None:
        """The weights' d_out: the main weights', else the source's (given without them)."""
        if self.weights:
            return len(self.weights["query"][0])
        if self.source_sequence is not None and self.source_sequence.weights:
            return len(self.source_sequence.weights["key"][0])
        return None
