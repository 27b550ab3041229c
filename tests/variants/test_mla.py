"""mla: latent attention against a numpy oracle written from the DeepSeek-V2 paper's equations,
and absorption (W_uk into the queries, W_uv into the output) giving the same output."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.variants.problems import trace
from tracer.errors import UsageError
from tracer.learner.judging.mutations import mistakes_of

HEADS, D_OUT, RANK, ROPE = 2, 6, 4, 4


def rope(x: np.ndarray) -> np.ndarray:
    """Interleaved rotary embedding with base 10000, positions 0.. on the second-last axis."""
    d = x.shape[-1]
    theta = 10000.0 ** -(np.arange(0, d, 2) / d)
    turn = np.exp(1j * np.arange(x.shape[-2])[:, None] * theta[None, :])
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * turn
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def oracle(got) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Naive latent attention in float64, token by token and head by head."""
    W = {k: v.double().numpy() for k, v in got.stage("projections").tensors.items()}
    x = got.context.inputs.double().numpy()
    n, hd = x.shape[0], D_OUT // HEADS
    c = x @ W["W_dkv"]
    k_rope = rope(x @ W["W_kr"])
    out = np.zeros((n, D_OUT))
    heads = []
    for h in range(HEADS):
        cols = slice(h * hd, (h + 1) * hd)
        q = np.concatenate(
            [(x @ W["W_query"])[:, cols], rope((x @ W["W_qr"])[:, h * ROPE : (h + 1) * ROPE])],
            axis=1,
        )
        k = np.concatenate([c @ W["W_uk"][:, cols], k_rope], axis=1)
        v = c @ W["W_uv"][:, cols]
        z = np.zeros((n, hd))
        for i in range(n):
            s = q[i] @ k[: i + 1].T / np.sqrt(hd + ROPE)
            w = np.exp(s - s.max())
            z[i] = (w / w.sum()) @ v[: i + 1]
        heads.append(z)
    out = np.concatenate(heads, axis=1) @ W["W_out"] + W["b_out"]
    return out


def run(absorb: bool, **options: object):  # type: ignore[no-untyped-def]
    return trace(
        "mla",
        init="randn",
        d_out=D_OUT,
        options={"heads": HEADS, "rank": RANK, "rope_dim": ROPE, "absorb": absorb, **options},
    )


@pytest.fixture(scope="module")
def naive():  # type: ignore[no-untyped-def]
    return run(False)


@pytest.fixture(scope="module")
def absorbed():  # type: ignore[no-untyped-def]
    return run(True)


def test_matches_the_numpy_oracle(naive) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_allclose(naive.output, oracle(naive), rtol=1e-4, atol=1e-4)


def test_absorbed_equals_naive(naive, absorbed) -> None:  # type: ignore[no-untyped-def]
    torch.testing.assert_close(absorbed.output, naive.output, rtol=1e-5, atol=1e-5)
    check = absorbed.stage("check").tensors
    torch.testing.assert_close(check["difference"], absorbed.output - naive.output)
    largest = float(check["difference"].abs().max())
    assert largest < 1e-4
    title = absorbed.stage("check").title
    assert ("the same to the last bit" in title) == (largest == 0)
    # The absorbed route never builds a key or a value: its queries live in the latent's space.
    names = [stage.name for stage in absorbed.stages]
    assert "keys_values" not in names and "absorbed" in names
    assert absorbed.stage("absorbed").tensors["absorbed_queries"].shape == (HEADS, 6, RANK)


def test_the_cache_is_the_latent_and_the_rotary_key(naive) -> None:  # type: ignore[no-untyped-def]
    latent = naive.stage("latent")
    assert latent.tensors["latent"].shape == (6, RANK)
    assert latent.tensors["key_rope"].shape == (6, ROPE)
    # Each part's width, and not the total that lesson 17 asks for.
    assert f"latent ({RANK} numbers)" in latent.title and f"rotary key ({ROPE})" in latent.title
    assert f"{RANK + ROPE} in all" not in latent.title


def test_the_wrong_transpose_is_a_mistake_that_changes_the_output() -> None:
    square = run(False, rank=D_OUT // HEADS)  # rank = head_dim: the wrong transpose runs
    wrong = next(m for m in mistakes_of(square.variant) if m.code == "absorb-transpose")
    made = wrong.make(square.context)
    assert not torch.allclose(made["context"], square.output, atol=1e-3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"d_out": 5}, "not divisible by --heads 2"),
        ({"options": {"rope_dim": 3}}, "rope_dim 3 is odd"),
    ],
)
def test_shapes_that_cannot_work_are_usage_errors(options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        trace("mla", **options)


@pytest.mark.parametrize("absorb", [False, True])
def test_a_focused_query_is_that_row(absorb: bool) -> None:
    full = run(absorb).output
    focused = trace(
        "mla",
        init="randn",
        d_out=D_OUT,
        query=3,
        options={"heads": HEADS, "rank": RANK, "rope_dim": ROPE, "absorb": absorb},
    ).output
    torch.testing.assert_close(focused, full[3])
