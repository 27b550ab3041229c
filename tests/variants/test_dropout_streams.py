"""Every built-in draws its dropout mask from one stream: numpy's ``RandomState(seed)``.

The README promises that masks are the same on every platform, so two variants
that compute the same weights must also drop the same ones: ``sliding-window``
with a window as long as the text is ``masked``, and ``grouped-query`` with as
many key/value heads as heads is ``multihead``. The oracle for the mask is
numpy itself, not our own output.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.variants.problems import HOST, trace

SEEDS_AND_RATES = [(123, 0.5), (0, 0.1), (7, 0.3), (2**32 + 5, 0.8)]


def numpy_dropout(weights: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """Keep where numpy's RandomState(seed % 2**32) draws at least p, scaled by 1/(1-p)."""
    draws = np.random.RandomState(seed % 2**32).random_sample(tuple(weights.shape))
    return torch.where(torch.from_numpy(draws >= p), weights / (1 - p), torch.zeros(()))


def dropped(variant: str, seed: int, p: float, **options: object) -> torch.Tensor:
    return trace(variant, seed=seed, dropout=p, **options).stage("dropout").tensors["weights"]


@pytest.mark.parametrize(("seed", "p"), SEEDS_AND_RATES)
def test_a_window_as_long_as_the_text_drops_what_masked_drops(seed: int, p: float) -> None:
    # "your-journey" has six tokens: a window of 6 hides nothing the causal mask does not.
    window = dropped("sliding-window", seed, p, options={"window": 6})
    masked = dropped("masked", seed, p)
    assert torch.equal(window, masked)
    focused = dropped("sliding-window", seed, p, query=3, options={"window": 6})
    assert torch.equal(focused, masked[3])


@pytest.mark.parametrize(("seed", "p"), SEEDS_AND_RATES)
@pytest.mark.parametrize("heads", [1, 2])
def test_one_kv_head_per_head_drops_what_multihead_drops(seed: int, p: float, heads: int) -> None:
    options = {"heads": heads}
    grouped = dropped("grouped-query", seed, p, d_out=4, options={**options, "kv_heads": heads})
    multihead = dropped("multihead", seed, p, d_out=4, options=options)
    assert torch.equal(grouped, multihead)
    focused = dropped(
        "grouped-query", seed, p, d_out=4, query=1, options={**options, "kv_heads": heads}
    )
    assert torch.equal(focused, multihead[:, 1])


def with_dropout_stage() -> list[str]:
    return sorted(name for name, variant in HOST.variants.items() if "dropout" in variant.stages)


def test_the_variants_with_a_dropout_stage_are_the_ones_compared_here() -> None:
    # A new built-in with a dropout stage is checked by the next test automatically.
    assert {"masked", "multihead", "sliding-window", "grouped-query"} <= set(with_dropout_stage())


@pytest.mark.parametrize("variant", with_dropout_stage())
@pytest.mark.parametrize(("seed", "p"), SEEDS_AND_RATES[:2])
def test_every_dropout_stage_is_numpys_mask_over_the_weights(
    variant: str, seed: int, p: float
) -> None:
    found = trace(variant, seed=seed, dropout=p)
    weights = found.stage("weights").tensors["weights"]
    torch.testing.assert_close(
        found.stage("dropout").tensors["weights"], numpy_dropout(weights, p, seed)
    )
