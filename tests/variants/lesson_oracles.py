"""Independent answers to the live quizzes of lessons 08-11, for the shipped-lesson tests.

Each is computed with torch's own functions (SDPA, cross_entropy, autograd, the FLOP
counter) from the course's sentence and the weights its notebooks draw, never by running
the variants.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from tests.data import seeds
from tests.variants.induction_oracle import DEFAULT, numpy_forward

TOKENS = ("Your", "journey", "starts", "with", "one", "step")


def sentence() -> torch.Tensor:
    return torch.tensor(seeds.SEED_003_INPUTS)


def drawn(draw: Callable[..., torch.Tensor], d_out: int = 2) -> list[torch.Tensor]:
    """W_query, W_key, W_value as the notebooks draw them: manual_seed(123), three draws."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        return [draw(3, d_out) for _ in range(3)]


def band_weights(window: int) -> torch.Tensor:
    x = sentence()
    w_q, w_k, _ = drawn(torch.rand)
    i, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
    visible = (j <= i) & (j > i - window)
    scores = (x @ w_q) @ (x @ w_k).T / math.sqrt(2)
    return torch.softmax(scores.masked_fill(~visible, -torch.inf), dim=-1)


def causal_context() -> torch.Tensor:
    x = sentence()
    w_q, w_k, w_v = drawn(torch.rand)
    return F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, is_causal=True)


def _mv_flops(a_shape, b_shape, *args, out_shape=None, **kwargs):  # type: ignore[no-untyped-def]
    return 2 * a_shape[0] * a_shape[1]


def counted_multiply_adds(work: Callable[[], object]) -> int:
    with FlopCounterMode(display=False, custom_mapping={torch.ops.aten.mv: _mv_flops}) as flops:
        work()
    return flops.get_total_flops() // 2


def decode_with_cache() -> None:
    """Greedy decoding of the sentence with a KV cache, written from scratch."""
    x = sentence()
    w_q, w_k, w_v = drawn(torch.rand)
    keys, values = [], []
    for t in range(6):
        keys.append(x[t] @ w_k)
        values.append(x[t] @ w_v)
        scores = torch.stack(keys) @ (x[t] @ w_q)
        torch.softmax(scores / math.sqrt(2), dim=0) @ torch.stack(values)


def recompute_every_prefix() -> None:
    x = sentence()
    w_q, w_k, w_v = drawn(torch.rand)
    for t in range(1, 7):
        prefix = x[:t]
        q, k, v = prefix @ w_q, prefix @ w_k, prefix @ w_v
        scores = q @ k.T / math.sqrt(2)
        torch.softmax(scores.masked_fill(torch.ones(t, t).triu(1).bool(), -torch.inf), -1) @ v


def randn_scaled_row(token: str) -> torch.Tensor:
    x = sentence()
    w_q, w_k, _ = drawn(torch.randn)
    return ((x @ w_q) @ (x @ w_k).T / math.sqrt(2))[TOKENS.index(token)]


PARTNER = (torch.arange(6) + 1) % 6


def training_loss(w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, targets: torch.Tensor):  # type: ignore[no-untyped-def]
    x = sentence().double()
    scores = (x @ w_q) @ (x @ w_k).T / math.sqrt(w_k.shape[1])
    weights = torch.softmax(scores, dim=-1)
    return F.cross_entropy(scores, PARTNER) + F.mse_loss(weights @ (x @ w_v), targets), weights


def trained(steps: int = 50, lr: float = 2.0) -> tuple[list[float], torch.Tensor]:
    """Plain gradient descent with torch.autograd: the losses and the final weights."""
    params = [w.double().requires_grad_() for w in drawn(torch.rand)]
    targets = (sentence().double() @ params[2].detach())[PARTNER]
    losses = []
    for _ in range(steps):
        loss, _ = training_loss(*params, targets)
        losses.append(float(loss.detach()))
        grads = torch.autograd.grad(loss, params)
        params = [
            (p - lr * g).detach().requires_grad_() for p, g in zip(params, grads, strict=True)
        ]
    loss, weights = training_loss(*params, targets)
    return [*losses, float(loss.detach())], weights.detach()


MODERN_ORACLES: dict[tuple[str, str], Callable[[], float | str | frozenset[tuple[int, ...]]]] = {
    # The earliest key "step" (position 5) gives a weight to through the window of 3.
    ("08_windows_and_groups", "first-key-step"): lambda: TOKENS[
        int((band_weights(3)[5] > 0).nonzero()[0])
    ],
    ("08_windows_and_groups", "step-with"): lambda: float(band_weights(3)[5, 3]),
    # One key and one value head of 8 / 4 columns, against one per query head.
    ("08_windows_and_groups", "cache-per-token"): lambda: 2 * 1 * (8 // 4),
    ("08_windows_and_groups", "cache-per-token-multihead"): lambda: 2 * 4 * (8 // 4),
    ("09_kv_cache", "cache-size-with"): lambda: TOKENS.index("with") + 1,
    ("09_kv_cache", "context-starts"): lambda: float(causal_context()[2, 0]),
    ("09_kv_cache", "work-cached"): lambda: counted_multiply_adds(decode_with_cache),
    ("09_kv_cache", "work-recompute"): lambda: counted_multiply_adds(recompute_every_prefix),
    ("10_online_softmax", "final-m-journey"): lambda: float(randn_scaled_row("journey").max()),
    ("10_online_softmax", "final-l-journey"): lambda: float(
        (randn_scaled_row("journey") - randn_scaled_row("journey").max()).exp().sum()
    ),
    ("11_training", "loss-start"): lambda: trained(steps=0)[0][0],
    ("11_training", "loss-end"): lambda: trained()[0][-1],
    ("11_training", "step-your-after"): lambda: float(trained()[1][5, 0]),
    # The induction model, by the numpy forward pass: the previous-token head's weight from
    # the second B to the S before it, and where the induction head puts over half its weight.
    ("13_induction_heads", "prev-weight-14"): lambda: float(
        numpy_forward(DEFAULT)["layer0_weights"][2, 14, 13]
    ),
    ("13_induction_heads", "look-14"): lambda: frozenset(
        (int(h), int(k))
        for h, k in zip(
            *(numpy_forward(DEFAULT)["layer1_weights"][:, 14] > 0.5).nonzero(), strict=True
        )
    ),
}
