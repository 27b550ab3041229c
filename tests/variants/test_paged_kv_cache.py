"""paged-kv-cache: the cache in blocks read through a block table gives kv-cache's output, for
every block size, and the block table is what the paging rule says."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.variants.problems import output, trace
from tracer.errors import UsageError
from tracer.learner.judging.mutations import mistakes_of
from tracer.testing import run_variant, substeps_of


def numpy_causal(got) -> np.ndarray:  # type: ignore[no-untyped-def]
    x = got.context.inputs.double().numpy()
    W = got.context.weights
    q, k, v = (x @ w.double().numpy() for w in (W.query, W.key, W.value))
    n = x.shape[0]
    out = np.zeros((n, v.shape[1]))
    for t in range(n):
        s = k[: t + 1] @ q[t] / np.sqrt(k.shape[1])
        w = np.exp(s - s.max())
        out[t] = (w / w.sum()) @ v[: t + 1]
    return out


@pytest.mark.parametrize("block", [1, 2, 3, 4, 7])
def test_equals_kv_cache_and_a_numpy_decoder(block: int) -> None:
    got = trace("paged-kv-cache", init="randn", d_out=3, options={"block": block})
    assert got.output is not None
    torch.testing.assert_close(got.output, output("kv-cache", init="randn", d_out=3))
    np.testing.assert_allclose(got.output, numpy_causal(got), rtol=1e-5, atol=1e-6)


def test_the_block_table_and_the_blocks() -> None:
    got = run_variant("paged-kv-cache", keep_substeps=True, block=2)
    blocks = got.stage("blocks").tensors
    # Six tokens in blocks of two: three blocks, taken from the odd-numbered free ones.
    assert blocks["table"].tolist() == [1, 3, 5]
    assert blocks["owner"].tolist() == [2, 1, 2, 1, 2, 1]
    keys = got.context.inputs @ got.context.weights.key
    for t in range(6):
        torch.testing.assert_close(blocks["key_pool"][[1, 3, 5][t // 2], t % 2], keys[t])
    tables = [step.tensors["table"].tolist() for step in substeps_of(got, "decode")]
    assert tables == [[1], [1], [1, 3], [1, 3], [1, 3, 5], [1, 3, 5]]


def test_a_block_table_off_by_one_changes_the_output() -> None:
    got = trace("paged-kv-cache", options={"block": 2})
    codes = {m.code: m for m in mistakes_of(got.variant)}
    assert {"block-table-off-by-one", "block-partial-dropped", "cache-not-updated"} <= set(codes)
    late = codes["block-table-off-by-one"].make(got.context)["context"]
    assert not torch.allclose(late, got.output, atol=1e-3)


def test_dropout_is_refused() -> None:
    with pytest.raises(UsageError, match="leave --dropout at 0"):
        trace("paged-kv-cache", dropout=0.5)


def test_a_focused_query_is_that_row() -> None:
    full = output("paged-kv-cache", options={"block": 3})
    torch.testing.assert_close(output("paged-kv-cache", query=4, options={"block": 3}), full[4])
