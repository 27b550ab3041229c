"""From names and options to a ready :class:`~tracer.tracing.Trace`.

This is the Python API behind ``attn trace``::

    from tracer.tracing.runner import TraceOptions, start_trace
    trace = start_trace("trainable", TraceOptions(seed=123)).run_to_end()
    trace.stage("weights").tensors["weights"]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracer.errors import InputError, PluginError, TracerError, UsageError
from tracer.inputs import InputSet, load_inputs
from tracer.inputs.input_set import SourceSequence
from tracer.inputs.weights import (
    gives_every_projection,
    make_params,
    make_source_weights,
    make_weights,
)

# Re-exported: the bounds are declared with the trace options, in tracer.options.
from tracer.options import MAX_D_OUT as MAX_D_OUT
from tracer.options import MAX_SEED as MAX_SEED
from tracer.options import MIN_SEED as MIN_SEED
from tracer.options import (
    Where,
    check_options,
    check_trace_option,
    flag_where,
)
from tracer.plugin_host import PluginHost
from tracer.suggest import did_you_mean
from tracer.variant import ParamValues, RunContext, Sizes, Source, Variant

if TYPE_CHECKING:
    import torch

    from tracer.tracing import Trace

DEFAULT_INPUTS = "your-journey"
DEFAULT_SOURCE = "ton-voyage"
"""The source of a variant with ``source="required"`` and no ``default_source`` of its own,
when neither the inputs (``source:``) nor ``--source`` give one."""
DEFAULT_SEED = 123
DEFAULT_INIT = "rand"
DEFAULT_D_OUT = 2


@dataclass(frozen=True)
class TraceOptions:
    """The options of ``attn trace``; ``d_out=None`` means "from the weights, else 2"."""

    inputs: str | InputSet | None = None
    """A built-in set's name, a file, or an :class:`InputSet`; None: the variant's own inputs
    if it has them (``induction``), else ``your-journey``."""
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

    text: str | None = None
    """Text for a variant that tokenizes it (``--text``): its tokens become the inputs."""

    def variant_options(self) -> dict[str, Any]:
        return {**self.extra, **self.options}


def resolve_query(query: int | str | None, tokens: tuple[str, ...]) -> int | None:
    """A 0-based query index from an index or a token (``1`` or ``journey``)."""
    if query is None:
        return None
    if isinstance(query, str) and not query.lstrip("-").isdigit():
        positions = [index for index, token in enumerate(tokens) if token == query]
        if len(positions) > 1:  # picking the first would focus a token the user may not mean
            listed = ", ".join(str(index) for index in positions)
            raise UsageError(
                f"--query '{query}' is ambiguous: it is tokens {listed} (numbered from 0); "
                f"give the position instead, e.g. --query {positions[0]}"
            )
        if positions:
            return positions[0]
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
    import torch  # on first use: `import tracer.tracing.runner` (and `attn --help`) stays torch-free

    variant_options = options.variant_options()
    if variant is not None:
        uses_weights = variant.uses_weights
        variant_options = check_options(
            variant, variant_options, where or flag_where(options.option_flags)
        )

    # The trace options, checked by the one validator lessons use too, named as the user
    # wrote them: a flag (--d-out) by default, a keyword in tracer.trace(...).
    def named(name: str) -> str:
        return where(name) if where is not None else "--" + name.replace("_", "-")

    input_set = tokenized(input_set, variant, variant_options)
    check_trace_option("init", options.init, named("init"))
    check_trace_option("seed", options.seed, named("seed"))
    if options.d_out is not None:
        check_trace_option("d_out", options.d_out, named("d_out"))
    check_trace_option("dropout", options.dropout, named("dropout"))
    if input_set.d_out is not None and options.d_out not in (None, input_set.d_out):
        raise UsageError(
            f"--d-out {options.d_out} disagrees with the weights of {_described(input_set)}, "
            f"which have d_out = {input_set.d_out}"
        )
    if not input_set.embeddings and (uses_weights or (variant and variant.uses_embeddings)):
        name = f"variant '{variant.name}'" if variant is not None else "this variant"
        raise UsageError(
            f"{_described(input_set)} gives tokens but no embeddings, which {name} needs"
        )
    query = resolve_query(options.query, input_set.tokens)
    d_out = options.d_out or input_set.d_out or DEFAULT_D_OUT
    if variant is not None and variant.cost is not None:  # against the limits, before any tensor
        sequence, _ = source_sequence(input_set, options, variant)
        sizes = Sizes(
            tokens=len(input_set.tokens),
            d_in=input_set.d_in if input_set.embeddings else 0,
            d_out=d_out,
            options=variant_options,
            query=query,
            source_tokens=len(sequence.tokens) if sequence is not None else 0,
            d_source=sequence.d_in if sequence is not None and sequence.embeddings else 0,
        )
        check_run_cost(variant, sizes, where or flag_where(options.option_flags), named)
    if input_set.embeddings:
        inputs = torch.tensor(input_set.embeddings, dtype=torch.float32)
    else:  # tokens alone: the variant embeds them itself
        inputs = torch.zeros(len(input_set.tokens), 0)
    weights = None
    if uses_weights:
        weights = make_weights(options.init, input_set.d_in, d_out, options.seed, input_set.weights)
    second = build_source(input_set, options, d_out, uses_weights, variant)
    params = build_params(input_set, options, variant, variant_options, inputs, d_out, second)
    return RunContext(
        inputs=inputs,
        tokens=input_set.tokens,
        weights=weights,
        query=query,
        dropout=options.dropout,
        seed=options.seed,
        # None only when the file gave every projection: some drawn (a query alone beside a
        # source) were drawn by this init, and an outside oracle needs it to draw them again.
        init=None if gives_every_projection(input_set.weights) else options.init,
        padding=input_set.padding,
        extra=variant_options,
        source=second,
        params=params,
        d_out=d_out if uses_weights else None,
        text=input_set.text,
    )


MAX_TEXT_CHARACTERS = 100_000
"""The longest ``--text`` read (its tokens are checked against the inputs' token limit too)."""


def text_inputs(text: str, variant: Variant | None) -> InputSet:
    """The input set of ``--text``: the text alone; the variant's tokenizer splits it."""
    name = f"variant '{variant.name}'" if variant is not None else "this variant"
    if variant is not None and variant.tokenize is None:
        raise UsageError(
            f"--text is for variants that read text with their own tokenizer (such as "
            f"'model'); {name} reads tokens and embeddings: give --inputs instead"
        )
    if not text.strip():
        raise UsageError("--text is empty; give the text to tokenize, e.g. --text 'A B C A B C'")
    if len(text) > MAX_TEXT_CHARACTERS:
        raise UsageError(
            f"--text has {len(text):,} characters; at most {MAX_TEXT_CHARACTERS:,} are read"
        )
    return InputSet(name="text", tokens=(), embeddings=(), source="--text", text=text)


def tokenized(input_set: InputSet, variant: Variant | None, options: Mapping[str, Any]) -> InputSet:
    """``input_set`` with its text split by the variant's tokenizer, when it has text and the
    variant tokenizes (``Variant(tokenize=...)``); unchanged otherwise."""
    from dataclasses import replace

    from tracer.inputs.input_set import MAX_TOKENS

    if input_set.text is None or variant is None or variant.tokenize is None:
        if input_set.text is not None and not input_set.tokens:
            name = f"variant '{variant.name}'" if variant is not None else "this variant"
            raise UsageError(
                f"{_described(input_set)} gives text, which {name} cannot tokenize; "
                "give tokens and embeddings instead"
            )
        return input_set
    try:
        tokens = tuple(str(token) for token in variant.tokenize(input_set.text, options))
    except TracerError:
        raise
    except Exception as exc:  # the plugin's tokenizer failed: its failure, in one line
        summary = (str(exc).strip().splitlines() or [""])[0]
        raise PluginError(
            f"variant '{variant.name}' could not tokenize the text: {type(exc).__name__}: {summary}"
        ) from None
    if not tokens:
        raise UsageError(f"the text of {_described(input_set)} has no tokens")
    if len(tokens) > MAX_TOKENS:
        raise UsageError(
            f"the text of {_described(input_set)} is {len(tokens):,} tokens; at most "
            f"{MAX_TOKENS:,} are read"
        )
    return replace(input_set, tokens=tokens, padding=None)


def build_params(
    input_set: InputSet,
    options: TraceOptions,
    variant: Variant | None,
    variant_options: Mapping[str, Any],
    inputs: torch.Tensor,
    d_out: int,
    source: Source | None,
) -> ParamValues:
    """``run.params``: the inputs' ``params:`` checked against ``Variant(params=...)``, and
    every declared parameter they do not give drawn from the seed (see ``make_params``)."""
    declared = variant.params if variant is not None else ()
    given = dict(input_set.params or {})
    names = [param.name for param in declared]
    whose = f"variant '{variant.name}'" if variant is not None else "the variant"
    for name, value in given.items():
        if name not in names:
            listed = ", ".join(names) if names else "none"
            raise InputError(
                f"params.{name}: {whose} declares no parameter '{name}'"
                f"{did_you_mean(name, names)}; it declares: {listed}",
                value.name_at,
            )
    if not declared:
        return ParamValues()
    sizes: dict[str, int] = {
        "tokens": int(inputs.shape[0]),
        "d_in": int(inputs.shape[1]),
        "d_out": d_out,
        **{
            k: v
            for k, v in variant_options.items()
            if isinstance(v, int) and not isinstance(v, bool)
        },
    }
    if source is not None:
        sizes["source_tokens"] = int(source.inputs.shape[0])
        sizes["d_source"] = int(source.inputs.shape[1])
    for param in declared:
        missing = [size for size in param.size_names() if size not in sizes]
        if missing:
            raise UsageError(
                f"parameter '{param.name}' of {whose} needs '{missing[0]}', which this run "
                "does not have (no source sequence)"
            )
        shape = param.resolve(sizes)
        if any(size < 1 for size in shape):
            raise UsageError(
                f"parameter '{param.name}' of {whose} would have shape {_shape(shape)} "
                f"({', '.join(map(str, param.shape))}) for these inputs; every size must be "
                "at least 1"
            )
        found = given.get(param.name)
        if found is not None and found.shape != shape:
            raise InputError(
                f"params.{param.name} is {_shape(found.shape)} but {whose} declares "
                f"({', '.join(map(str, param.shape))}) = {_shape(shape)} for these inputs",
                found.where,
            )
    after: list[tuple[int, int]] = []
    if variant is not None and variant.uses_weights:
        after = [(int(inputs.shape[1]), d_out)] * 3
        if source is not None:
            after += [(int(source.inputs.shape[1]), d_out)] * 2
    return make_params(declared, sizes, options.init, options.seed, given, after=after)


def check_run_cost(variant: Variant, sizes: Sizes, where: Where, named: Where) -> None:
    """Refuse a run whose declared cost (``Variant(cost=...)``) is past a limit: sub-steps,
    numbers held and yielded, the float range, and the memory the run may allocate (under
    ``ulimit -v``, and ``ATTN_PLUGIN_MEMORY_MB`` for a variant that runs in a worker)."""
    if variant.cost is None:
        return
    from tracer.tracing.budget import address_space_left, check_cost
    from tracer.tracing.worker import MEMORY_ENV, WorkerLimits, should_isolate

    left, why = address_space_left(), "this process's address-space limit, ulimit -v"
    module = getattr(variant.run, "__module__", "") or ""
    if should_isolate(module.startswith("tracer.builtin_plugins.")):
        plugin = WorkerLimits.from_environment().memory_mb * 2**20
        if left is None or plugin < left:
            left, why = plugin, MEMORY_ENV
    check_cost(variant, sizes, where, named, left, why)


def _shape(shape: tuple[int, ...]) -> str:
    return "×".join(map(str, shape)) if shape else "a single number"


def build_source(
    input_set: InputSet,
    options: TraceOptions,
    d_out: int,
    uses_weights: bool,
    variant: Variant | None = None,
) -> Source | None:
    """``run.source``: ``--source`` (its tokens and embeddings) or the inputs' ``source:``;
    for a variant with ``source="required"`` and neither, its default source."""
    import torch  # on first use (see build_context)

    sequence, default = source_sequence(input_set, options, variant)
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
        default=default.name if default is not None else None,
    )


def source_sequence(
    input_set: InputSet, options: TraceOptions, variant: Variant | None = None
) -> tuple[SourceSequence | None, InputSet | None]:
    """The second sequence of a run (``--source``, the inputs' ``source:``, or the variant's
    default source), and the input set that gave it when it is the default."""
    sequence = input_set.source_sequence
    if options.source is not None:
        given = (
            options.source if isinstance(options.source, InputSet) else load_inputs(options.source)
        )
        return SourceSequence(given.tokens, given.embeddings), None
    if sequence is None and variant is not None and variant.source == "required":
        default = default_source(variant)
        return SourceSequence(default.tokens, default.embeddings), default
    return sequence, None


def _described(input_set: InputSet) -> str:
    if input_set.source == "--text":
        return "--text"
    if input_set.source != "built-in":
        return input_set.source
    return f"input set '{input_set.name}'"


def resolve_inputs(spec: str | InputSet | None, variant: Variant | None = None) -> InputSet:
    """The input set of ``spec``; None means ``variant``'s own inputs, else ``your-journey``."""
    if isinstance(spec, InputSet):
        return spec
    if spec is None:
        if variant is not None and variant.inputs is not None:
            return variant.inputs
        spec = DEFAULT_INPUTS
    return load_inputs(spec)


def default_source(variant: Variant) -> InputSet:
    """The input set that serves as ``variant``'s source when none is given."""
    chosen = variant.default_source
    if isinstance(chosen, InputSet):
        return chosen
    return load_inputs(chosen or DEFAULT_SOURCE)


def start_trace(
    variant: str,
    options: TraceOptions | None = None,
    host: PluginHost | None = None,
    where: Where | None = None,
    *,
    check: bool = False,
) -> Trace:
    """A trace of ``variant`` on the options' inputs; iterate it, or call ``run_to_end()``.

    ``where`` names a variant option in messages (default: ``-o NAME``, or the flag typed).
    ``check``: the reference ``attn check`` compares a learner's code with (the variant's
    ``checked_with``, where it has one).
    """
    options = options or TraceOptions()
    host = host or PluginHost()
    found = host.variant(variant)
    if options.text is not None:
        input_set = text_inputs(options.text, found)
    else:
        input_set = resolve_inputs(options.inputs, found)
    context = build_context(input_set, options, variant=found, where=where)
    return host.start(variant, context, check=check)
