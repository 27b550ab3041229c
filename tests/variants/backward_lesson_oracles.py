"""Independent answers to the live quizzes of lessons 14 and 15 (the backward pass).

Each is computed with torch.autograd from the course's sentence and the weights its
notebooks draw, never by running the variants: the loss is the sum of the context
vectors, so dO is 1 everywhere (the variants' default ``upstream=ones``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from tests.variants.lesson_oracles import TOKENS, drawn, sentence


def gradients(draw: Callable[..., torch.Tensor], causal: bool) -> dict[str, torch.Tensor]:
    """The gradients of sum(softmax(Q Kᵀ / √d_k) V) by autograd, in float64."""
    x = sentence().double()
    params = [w.double().requires_grad_() for w in drawn(draw)]
    q, k, v = x @ params[0], x @ params[1], x @ params[2]
    scores = q @ k.T / math.sqrt(k.shape[1])
    if causal:
        scores = scores.masked_fill(torch.ones(6, 6).triu(1).bool(), -torch.inf)
    for t in (v, scores):
        t.retain_grad()
    (torch.softmax(scores, dim=-1) @ v).sum().backward()
    assert v.grad is not None and scores.grad is not None and params[2].grad is not None
    return {"dV": v.grad, "dS": scores.grad, "dW_v": params[2].grad}


def step_direction(gradient: torch.Tensor) -> str:
    """Which way W <- W - lr · dW moves the entries (lr > 0)."""
    if bool((gradient > 0).all()):
        return "every entry goes down"
    if bool((gradient < 0).all()):
        return "every entry goes up"
    return "some go up and some go down"


def logsumexp_row(token: str) -> float:
    x = sentence().double()
    w_q, w_k, _ = (w.double() for w in drawn(torch.randn))
    scores = (x @ w_q) @ (x @ w_k).T / math.sqrt(2)
    return float(torch.logsumexp(scores[TOKENS.index(token)], dim=0))


BACKWARD_ORACLES: dict[tuple[str, str], Callable[[], float | str | frozenset[tuple[int, ...]]]] = {
    ("14_backward", "dv-your"): lambda: float(gradients(torch.rand, False)["dV"][0, 0]),
    ("14_backward", "ds-row-sum"): lambda: float(gradients(torch.rand, False)["dS"][1].sum()),
    ("14_backward", "update-sign-w-value"): lambda: step_direction(
        gradients(torch.rand, False)["dW_v"]
    ),
    # Exactly zero: the hidden cells (weight 0) and the first row's single weight of 1.
    ("14_backward", "causal-ds-zero"): lambda: frozenset(
        (int(i), int(j)) for i, j in (gradients(torch.rand, True)["dS"] == 0).nonzero().tolist()
    ),
    ("15_flash_backward", "logsumexp-journey"): lambda: logsumexp_row("journey"),
    # Six tokens in tiles of 2: key tile j is skipped against query tile i when j > i.
    ("15_flash_backward", "causal-skipped-tiles"): lambda: frozenset(
        (j, i) for j in range(3) for i in range(3) if 2 * j > 2 * i + 1
    ),
    ("15_flash_backward", "causal-dv-one"): lambda: float(gradients(torch.randn, True)["dV"][4, 0]),
}
