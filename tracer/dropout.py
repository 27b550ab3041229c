"""Dropout as every built-in variant applies it: one mask stream, the same on every platform.

Public for plugin authors: ``from tracer.dropout import dropout`` (or ``run.dropout_weights(w)``)
honours ``--dropout`` exactly as the built-ins do, so a lesson's numbers agree across variants.

The keep/drop draws come from numpy's ``RandomState(seed)``, whose stream is
fixed on every platform; torch's own dropout draws a different mask on
different machines for the same seed, and a lesson must not depend on that.
Every built-in variant that drops weights draws them here, so two variants that compute
the same weights (``sliding-window`` with a window as long as the text and
``masked``; ``grouped-query`` with as many key/value heads as heads and
``multihead``) also drop the same ones.
"""

import numpy as np
import torch


def keep_mask(shape: tuple[int, ...], p: float, seed: int) -> torch.Tensor:
    """True where a weight survives: numpy's ``RandomState(seed)`` draws at least ``p`` there.

    RandomState takes 32-bit seeds, hence ``seed % 2**32``.
    """
    draws = np.random.RandomState(seed % 2**32).random_sample(shape)
    return torch.from_numpy(draws >= p)


def dropout(
    weights: torch.Tensor, p: float, seed: int, *, query: int | None = None
) -> torch.Tensor:
    """Zero each weight with probability p and scale the survivors by 1 / (1 - p).

    ``weights`` is (..., queries, keys). ``query``: ``weights`` holds only that
    query's row, (..., keys), as a run focused with ``--query`` computes it; the
    mask is drawn for every query of the self-attention, (..., keys, keys), and
    its row taken, so a focused run drops what the full run drops.
    """
    if p == 0:
        return weights
    shape = tuple(weights.shape)
    if query is None:
        keep = keep_mask(shape, p, seed)
    else:
        keep = keep_mask((*shape[:-1], shape[-1], shape[-1]), p, seed)[..., query, :]
    return weights * keep / (1 - p)
