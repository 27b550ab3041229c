"""Creating the query/key/value projections reproducibly.

Every initialisation runs under ``torch.random.fork_rng`` so that tracing never
changes the caller's global random state, yet draws exactly what a notebook
that calls ``torch.manual_seed(seed)`` first would draw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tracer.inputs.sets import ParamValue
from tracer.options import INITS as INITS  # one list, declared with the trace options
from tracer.variant import Param, ParamValues, SourceWeights, Weights

if TYPE_CHECKING:
    import torch


PROJECTIONS = ("query", "key", "value")


def gives_every_projection(explicit: Mapping[str, object] | None) -> bool:
    """Whether an inputs file's ``weights`` give all three projections (none is drawn)."""
    return explicit is not None and all(name in explicit for name in PROJECTIONS)


def make_weights(
    init: str,
    d_in: int,
    d_out: int,
    seed: int,
    explicit: Mapping[str, object] | None = None,
) -> Weights:
    """Query, key and value matrices of shape (d_in, d_out), applied as ``x @ W``.

    - ``rand`` / ``randn``: ``torch.rand(d_in, d_out)`` (or ``randn``) for query, key,
      value in that order, as the course notebooks do.
    - ``linear``: ``nn.Linear(d_in, d_out, bias=False)`` for query, key, value in that
      order; the layer computes ``x @ W.T``, so we hand out ``W.T``.
    - explicit matrices from an inputs file win over ``init``; those it does not give (key
      and value, beside a source that gives its own) are drawn as above, so they are the
      ones the same seed draws without the file.
    """
    import torch

    names = PROJECTIONS
    if explicit is not None and gives_every_projection(explicit):
        return Weights(*(torch.tensor(explicit[name], dtype=torch.float32) for name in names))
    if explicit is not None:
        drawn = make_weights(init, d_in, d_out, seed)
        return Weights(
            *(
                torch.tensor(explicit[name], dtype=torch.float32)
                if name in explicit
                else getattr(drawn, name)
                for name in names
            )
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if init == "linear":
            layers = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(3)]
            matrices = [layer.weight.detach().T for layer in layers]
        else:
            draw = torch.rand if init == "rand" else torch.randn
            matrices = [draw(d_in, d_out) for _ in range(3)]
    return Weights(*matrices)


def make_source_weights(
    init: str,
    d_in: int,
    d_source: int,
    d_out: int,
    seed: int,
    explicit: Mapping[str, object] | None = None,
) -> SourceWeights:
    """Key and value projections of a source sequence, each (d_source, d_out).

    Drawn after the main sequence's query, key and value under the same seed, as a
    notebook that seeds once and then makes W_q, W_k, W_v and the cross-attention's
    W_k', W_v' would; so the main weights are those every other variant sees.
    Explicit matrices (``source.weights`` of an inputs file) win over ``init``.
    """
    import torch

    if explicit is not None:
        return SourceWeights(
            *(torch.tensor(explicit[name], dtype=torch.float32) for name in ("key", "value"))
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if init == "linear":
            for _ in range(3):
                torch.nn.Linear(d_in, d_out, bias=False)
            layers = [torch.nn.Linear(d_source, d_out, bias=False) for _ in range(2)]
            matrices = [layer.weight.detach().T for layer in layers]
        else:
            draw = torch.rand if init == "rand" else torch.randn
            for _ in range(3):
                draw(d_in, d_out)
            matrices = [draw(d_source, d_out) for _ in range(2)]
    return SourceWeights(*matrices)


def make_params(
    declared: Sequence[Param],
    sizes: Mapping[str, int],
    init: str,
    seed: int,
    given: Mapping[str, ParamValue] | None = None,
    *,
    after: Sequence[tuple[int, int]] = (),
) -> ParamValues:
    """A variant's declared parameters: given by the inputs' ``params:``, else drawn.

    Drawn under ``torch.manual_seed(seed)`` after the projections (``after``: their
    shapes, drawn first with ``init`` exactly as :func:`make_weights` and
    :func:`make_source_weights` draw them), in declaration order, each with its own
    ``init`` (None: ``init``): ``rand``/``randn`` draw ``torch.rand(shape)`` /
    ``torch.randn(shape)``; ``linear`` draws ``torch.rand(shape) * 2 - 1`` times
    ``1 / sqrt(shape[0])`` (``nn.Linear``'s bound for ``x @ W``); ``zeros``/``ones``
    draw nothing. A parameter the inputs give is still drawn (and replaced), so every
    other parameter is the same whether or not it is given.
    """
    import torch

    made: dict[str, torch.Tensor] = {}
    inits: dict[str, str] = {}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for d_in, d_out in after:
            if init == "linear":
                torch.nn.Linear(d_in, d_out, bias=False)
            else:
                (torch.rand if init == "rand" else torch.randn)(d_in, d_out)
        for param in declared:
            shape = param.resolve(sizes)
            how = param.init or init
            if how == "zeros":
                drawn = torch.zeros(shape)
            elif how == "ones":
                drawn = torch.ones(shape)
            elif how == "randn":
                drawn = torch.randn(shape)
            elif how == "linear":
                bound = 1 / math.sqrt(shape[0]) if shape else 1.0
                drawn = (torch.rand(shape) * 2 - 1) * bound
            else:
                drawn = torch.rand(shape)
            made[param.name] = drawn
            inits[param.name] = how
    for name, value in (given or {}).items():
        made[name] = torch.tensor(value.values, dtype=torch.float32).reshape(value.shape)
        inits[name] = "inputs"
    values = ParamValues(made)
    values.inits = inits
    return values
