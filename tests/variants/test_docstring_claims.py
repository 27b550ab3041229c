"""What a built-in plugin's docstring says two variants share is checked against their runs.

A plugin's docstring is also an example a learner reads, so it claims no more than the numbers
show: where it says two runs give the same numbers (or "exactly", "bit for bit") the tensors
are equal bit for bit, and where the bits differ it says "up to float rounding" (and the runs
are within rounding of each other). Each test names the sentence it backs.
"""

from __future__ import annotations

import pytest
import torch

from tests.variants.problems import trace

INITS = ["rand", "randn", "linear"]
ROUNDING = 1e-6


def tensor(variant: str, stage: str, name: str | None = None, **options: object) -> torch.Tensor:
    found = trace(variant, **options).stage(stage)
    return found.tensors[name] if name else next(iter(found.tensors.values()))


@pytest.mark.parametrize("init", INITS)
def test_sliding_window_as_long_as_the_text_equals_masked(init: str) -> None:
    """sliding_window.py: "With a window at least as long as the text ... the output equals
    ``masked``'s." (bit for bit)"""
    for stage in ("weights", "context"):
        wide = tensor("sliding-window", stage, stage, init=init, options={"window": 6})
        assert torch.equal(wide, tensor("masked", stage, stage, init=init))


@pytest.mark.parametrize("init", INITS)
def test_paged_cache_is_kv_cache_bit_for_bit_and_causal_up_to_rounding(init: str) -> None:
    """paged_kv_cache.py: "``kv-cache``'s bit for bit, and so causal attention up to float
    rounding"; kv_cache.py: "Equals masked up to float rounding"."""
    paged = tensor("paged-kv-cache", "context", init=init)
    cached = tensor("kv-cache", "context", init=init)
    assert torch.equal(paged, cached)
    assert (cached - tensor("masked", "context", "context", init=init)).abs().max() <= ROUNDING


@pytest.mark.parametrize("init", INITS)
def test_online_softmax_equals_full_attention_up_to_rounding(init: str) -> None:
    """online_softmax.py: "equals ``trainable`` (or ``masked`` with ``causal=true``) up to
    float rounding (the sums are taken in another order)"."""
    online = tensor("online-softmax", "context", init=init)
    full = tensor("trainable", "context", init=init)
    assert (online - full).abs().max() <= ROUNDING
    causal = tensor("online-softmax", "context", init=init, options={"causal": True})
    assert (causal - tensor("masked", "context", "context", init=init)).abs().max() <= ROUNDING


@pytest.mark.parametrize("init", ["rand", "randn"])
def test_the_wrappers_first_head_has_the_weights_of_masked(init: str) -> None:
    """multihead_wrapper.py: "head 0 has exactly the weights of ``attn trace masked``" (its
    queries, keys and values, so its weights, bit for bit)."""
    for stage in ("queries", "keys", "values"):
        head = tensor("multihead-wrapper", stage, init=init)[0]
        assert torch.equal(head, tensor("masked", stage, init=init))
    head = tensor("multihead-wrapper", "weights", init=init)[0]
    assert torch.equal(head, tensor("masked", "weights", "weights", init=init))
