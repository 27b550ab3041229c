"""From names and options to a ready :class:`~tracer.tracing.Trace`.

This is the Python API behind ``attn trace``::

    from tracer.runner import TraceOptions, start_trace
    trace = start_trace("trainable", TraceOptions(seed=123)).run_to_end()
    trace.stage("weights").tensors["weights"]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracer.errors import UsageError
from tracer.inputs import InputSet, load_inputs
from tracer.inputs.input_set import SourceSequence
from tracer.inputs.weights import INITS, make_source_weights, make_weights
from tracer.options import Where, check_options, flag_where
from tracer.suggest import did_you_mean
from tracer.variant import RunContext, Source, Variant

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost
    from tracer.tracing import Trace

DEFAULT_INPUTS = "your-journey"
DEFAULT_SEED = 123
DEFAULT_INIT = "rand"
DEFAULT_D_OUT = 2
MIN_SEED, MAX_SEED = -(2**63), 2**63 - 1
"""What ``torch.manual_seed`` accepts."""
MAX_D_OUT = 4096


@dataclass(frozen=True)
class TraceOptions:
    """The options of ``attn trace``; ``d_out=None`` means "from the weights, else 2"."""

    inputs: str | InputSet = DEFAULT_INPUTS
    seed: int = DEFAULT_SEED
    init: str = DEFAULT_INIT
    d_out: int | None = None
    dropout: float = 0.0
    query: int | str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """The variant's own options (``heads``, ``window``...), as given; the original spelling."""
    options: dict[str, Any] = field(default_factory=dict)
    """The variant's own options, as given; merged over ``extra``."""
    option_flags: tuple[str, ...] = ()
    """Shorthand flags the user typed (``--heads``), so messages can name them."""
    source: str | InputSet | None = None
    """A second sequence (``--source``): an input set whose tokens and embeddings become
    ``run.source``, in place of the ``source:`` section of the inputs, if any."""

    def variant_options(self) -> dict[str, Any]:
        return {**self.extra, **self.options}


def resolve_query(query: int | str | None, tokens: tuple[str, ...]) -> int | None:
    """A 0-based query index from an index or a token (``1`` or ``journey``)."""
    if query is None:
        return None
    if isinstance(query, str) and not query.lstrip("-").isdigit():
        if query in tokens:
            return tokens.index(query)
        raise UsageError(f"--query '{query}' is not one of the tokens{did_you_mean(query, tokens)}")
    index = int(query)
    if not 0 <= index < len(tokens):
        raise UsageError(
            f"--query {index} is out of range: there are {len(tokens)} tokens, "
            f"numbered 0 to {len(tokens) - 1}"
        )
    return index


def build_context(
    input_set: InputSet,
    options: TraceOptions,
    uses_weights: bool = True,
    variant: Variant | None = None,
    where: Where | None = None,
) -> RunContext:
    """Validate the options against the inputs and create tensors and weights.

    With ``variant``, its declared options are checked (``where`` names their
    source in messages) and filled in with their defaults.
    """
    import torch

    variant_options = options.variant_options()
    if variant is not None:
        uses_weights = variant.uses_weights
        variant_options = check_options(
            variant, variant_options, where or flag_where(options.option_flags)
        )

    if options.init not in INITS:
        raise UsageError(
            f"unknown --init '{options.init}'{did_you_mean(options.init, INITS)}; "
            f"choose one of {', '.join(INITS)}"
        )
    if not MIN_SEED <= options.seed <= MAX_SEED:
        raise UsageError(
            f"--seed must be a 64-bit integer, between {MIN_SEED} and {MAX_SEED}, got {options.seed}"
        )
    if options.d_out is not None and options.d_out < 1:
        raise UsageError(f"--d-out must be at least 1, got {options.d_out}")
    if options.d_out is not None and options.d_out > MAX_D_OUT:
        raise UsageError(f"--d-out must be at most {MAX_D_OUT}, got {options.d_out}")
    if not 0.0 <= options.dropout < 1.0:
        raise UsageError(f"--dropout must be at least 0 and below 1, got {options.dropout:g}")
    if input_set.d_out is not None and options.d_out not in (None, input_set.d_out):
        source = (
            input_set.source if input_set.source != "built-in" else f"input set '{input_set.name}'"
        )
        raise UsageError(
            f"--d-out {options.d_out} disagrees with the weights of {source}, "
            f"which have d_out = {input_set.d_out}"
        )
    query = resolve_query(options.query, input_set.tokens)
    inputs = torch.tensor(input_set.embeddings, dtype=torch.float32)
    weights = None
    d_out = options.d_out or input_set.d_out or DEFAULT_D_OUT
    if uses_weights:
        weights = make_weights(options.init, input_set.d_in, d_out, options.seed, input_set.weights)
    second = build_source(input_set, options, d_out, uses_weights)
    return RunContext(
        inputs=inputs,
        tokens=input_set.tokens,
        weights=weights,
        query=query,
        dropout=options.dropout,
        seed=options.seed,
        init=None if input_set.weights else options.init,
        padding=input_set.padding,
        extra=variant_options,
        source=second,
    )


def build_source(
    input_set: InputSet, options: TraceOptions, d_out: int, uses_weights: bool
) -> Source | None:
    """``run.source``: ``--source`` (its tokens and embeddings) or the inputs' ``source:``."""
    import torch

    sequence = input_set.source_sequence
    if options.source is not None:
        given = (
            options.source if isinstance(options.source, InputSet) else load_inputs(options.source)
        )
        sequence = SourceSequence(given.tokens, given.embeddings)
    if sequence is None:
        return None
    weights = None
    if uses_weights:
        weights = make_source_weights(
            options.init, input_set.d_in, sequence.d_in, d_out, options.seed, sequence.weights
        )
    return Source(
        inputs=torch.tensor(sequence.embeddings, dtype=torch.float32),
        tokens=sequence.tokens,
        weights=weights,
    )


def start_trace(
    variant: str,
    options: TraceOptions | None = None,
    host: PluginHost | None = None,
    where: Where | None = None,
) -> Trace:
    """A trace of ``variant`` on the options' inputs; iterate it, or call ``run_to_end()``.

    ``where`` names a variant option in messages (default: ``-o NAME``, or the flag typed).
    """
    from tracer.plugin_host import PluginHost

    options = options or TraceOptions()
    host = host or PluginHost()
    found = host.variant(variant)
    input_set = (
        options.inputs if isinstance(options.inputs, InputSet) else load_inputs(options.inputs)
    )
    context = build_context(input_set, options, variant=found, where=where)
    return host.start(variant, context)
