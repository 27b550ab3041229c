"""Creating the query/key/value projections reproducibly.

Every initialisation runs under ``torch.random.fork_rng`` so that tracing never
changes the caller's global random state, yet draws exactly what a notebook
that calls ``torch.manual_seed(seed)`` first would draw.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracer.variant import SourceWeights, Weights

INITS = ("rand", "randn", "linear")


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
    - explicit matrices from an inputs file win over ``init``.
    """
    import torch

    if explicit is not None:
        return Weights(
            *(
                torch.tensor(explicit[name], dtype=torch.float32)
                for name in ("query", "key", "value")
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
