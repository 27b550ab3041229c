"""Rotary position embeddings, shared by ``rope`` and ``mla``: the angles and the rotation.

A head of width d is read as d/2 pairs of features. Pair i turns at its own
speed θᵢ = base^(−2i/d): the first pair once per position (θ₀ = 1 radian),
the last almost not at all. The token at position m has each of its pairs
turned by the angle m·θᵢ, a 2×2 rotation. A query turned by m·θ and a key
turned by n·θ have the dot product of the unturned vectors with a turn of
(n − m)·θ between them: their score depends on how far apart they are, never
on where they are.

Which features make a pair is a convention:

- ``interleaved`` (the default): neighbours, features 2i and 2i + 1. This is
  how the paper that introduced rotary embeddings writes the rotation, as a
  block-diagonal matrix of 2×2 rotations, and how Meta's reference code for
  LLaMA computes it (each pair read as one complex number). It is the default
  here because a pair is two neighbouring columns of every table the tool shows.
- ``half``: feature i with feature i + d/2, the ``rotate_half`` of GPT-NeoX and
  Hugging Face's LLaMA. The two conventions give the same scores only when the
  projections' columns are permuted to match; applied to the same weights they
  differ, which is how a checkpoint converted without that permutation breaks.

Ways of stretching a model trained on a short context to a longer one
(``scaling``, with the stretch ``factor`` s):

- ``linear`` (position interpolation): every θᵢ divided by s, so position m
  turns as far as position m/s did in training.
- ``ntk`` (NTK-aware): the base changes to base' = base · s^(d/(d−2)). The
  fastest pair (i = 0) keeps θ₀ = 1 and the slowest is slowed by exactly s:
  the high frequencies that tell neighbours apart are kept, the low ones are
  interpolated.
- ``yarn``: a per-pair ramp. With r = L / λᵢ the number of turns pair i makes
  over the original context of L tokens (λᵢ = 2π/θᵢ its wavelength), γ = 0 for
  r < α, 1 for r > β and linear between: θ'ᵢ = (1 − γ)·θᵢ/s + γ·θᵢ. Pairs that
  turn many times (r > β) keep their speed, pairs that turn less than α times
  are interpolated like ``linear``. The attention temperature multiplies both
  the cos and the sin by 0.1·ln(s) + 1, so every score is multiplied by
  (0.1·ln(s) + 1)². L = 2048, α = 1 and β = 32 are the values the YaRN paper
  gives for LLaMA, fixed here (the constants below).
"""

from __future__ import annotations

import math

import torch

SCALINGS = ("none", "linear", "ntk", "yarn")
PAIRINGS = ("interleaved", "half")
YARN_CONTEXT, YARN_ALPHA, YARN_BETA = 2048, 1.0, 32.0
"""YaRN's original context length L and its ramp's bounds α and β (turns over L)."""


def pairs(d: int, pairing: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The feature indices of each pair's first and second member (each d/2 long)."""
    if pairing == "half":
        first = torch.arange(d // 2)
        return first, first + d // 2
    first = torch.arange(0, d, 2)
    return first, first + 1


def frequencies(
    d: int,
    base: float,
    scaling: str = "none",
    factor: float = 1.0,
    original: int = YARN_CONTEXT,
    alpha: float = YARN_ALPHA,
    beta: float = YARN_BETA,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """(θ after scaling, θ before it, YaRN's ramp γ per pair, temperature on q and k).

    Computed in float64 and returned in float32. With d = 2, ``ntk``'s base' is undefined
    (d/(d−2)) and not needed: the only pair turns at θ₀ = base^0 = 1 whatever the base.
    """
    i = torch.arange(d // 2, dtype=torch.float64)
    unscaled = base ** (-2 * i / d)
    ramp = torch.zeros_like(unscaled)
    temperature = 1.0
    if scaling == "linear":
        theta = unscaled / factor
    elif scaling == "ntk" and d > 2:
        theta = (base * factor ** (d / (d - 2))) ** (-2 * i / d)
    elif scaling == "yarn":
        turns = original / (2 * math.pi / unscaled)  # r = L / λ
        ramp = ((turns - alpha) / (beta - alpha)).clamp(0.0, 1.0)
        theta = (1 - ramp) * unscaled / factor + ramp * unscaled
        temperature = 0.1 * math.log(factor) + 1.0
    else:
        theta = unscaled
    return theta.float(), unscaled.float(), ramp.float(), temperature


def angles(positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """(tokens, pairs): position m's angle for pair i, m·θᵢ."""
    return positions.to(torch.float32).unsqueeze(1) * theta.unsqueeze(0)


def rotate(
    x: torch.Tensor, turn: torch.Tensor, pairing: str, temperature: float = 1.0
) -> torch.Tensor:
    """Each row of ``x`` (tokens, d) with its pairs turned by its row of ``turn`` (tokens, d/2)."""
    first, second = pairs(x.shape[-1], pairing)
    cos, sin = torch.cos(turn) * temperature, torch.sin(turn) * temperature
    a, b = x[..., first], x[..., second]
    out = torch.empty_like(x)
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out
