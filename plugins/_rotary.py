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

Ways of stretching a model trained on a short context of L tokens
(``original_max_position_embeddings``) to a longer one (``scaling``, with the
stretch ``factor`` s), each as Hugging Face transformers computes it
(``modeling_rope_utils``), whose ``rope_type`` names they take:

- ``linear`` (position interpolation): every θᵢ divided by s, so position m
  turns as far as position m/s did in training.
- ``ntk`` (NTK-aware): the base changes to base' = base · s^(d/(d−2)). The
  fastest pair (i = 0) keeps θ₀ = 1 and the slowest is slowed by exactly s:
  the high frequencies that tell neighbours apart are kept, the low ones are
  interpolated. transformers has no such type; its ``dynamic`` scales the base
  by how much longer the text is:
- ``dynamic`` (dynamic NTK): the same change of base, but by how much longer
  *this* text is than L: base' = base · (s·n/L − (s − 1))^(d/(d−2)) for a text
  of n > L tokens; a text of at most L tokens is not scaled at all.
- ``yarn``: a per-pair mix γ of the pair's own speed and the interpolated one,
  θ'ᵢ = (1 − γᵢ)·θᵢ/s + γᵢ·θᵢ. Pair i turns rᵢ = L/λᵢ = L·θᵢ/2π times over the
  original context (λᵢ its wavelength). Pairs that turn more than β_fast = 32
  times keep their speed (γ = 1), pairs that turn less than β_slow = 1 time are
  interpolated (γ = 0). Between them, the ``ramp``:

  - ``index`` (the default): as transformers and the YaRN authors' code. The
    pair whose r would be exactly β is i(β) = d·ln(L/(2π·β)) / (2·ln base) (a
    fraction); γ falls linearly *in the pair index* from 1 at ⌊i(β_fast)⌋ to 0
    at ⌈i(β_slow)⌉ (``truncate=false`` keeps the fractions).
  - ``turns``: the YaRN paper's equation as printed, linear *in r*:
    γ = clamp((r − β_slow)/(β_fast − β_slow), 0, 1). r falls geometrically
    with i, so the two ramps differ between the bounds: with d = 8 and s = 4,
    pair 2 (r = 3.26) has γ = 0.5 on the index ramp and 0.073 on this one.

  The attention factor (``attention_factor``, by default 0.1·ln(s) + 1, or
  transformers' ratio of two such terms when ``mscale`` and ``mscale_all_dim``
  are given) multiplies both the cos and the sin, so every score is multiplied
  by its square.
- ``llama3`` (Llama 3.1): the paper's ramp in r, with its own bounds
  ``low_freq_factor`` (γ = 0 below) and ``high_freq_factor`` (γ = 1 above), and
  no attention factor.
"""

from __future__ import annotations

import math

import torch

SCALINGS = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")
PAIRINGS = ("interleaved", "half")
RAMPS = ("index", "turns")
"""YaRN's ramp between β_fast and β_slow: linear in the pair index (transformers, the YaRN
authors' code) or linear in the turns r (the YaRN paper's equation as printed)."""
YARN_CONTEXT, YARN_ALPHA, YARN_BETA = 2048, 1.0, 32.0
"""The default original context length L and YaRN's β_slow and β_fast (turns over L): the
values the YaRN paper gives for LLaMA."""
LLAMA3_LOW, LLAMA3_HIGH = 1.0, 4.0
"""Llama 3.1's ``low_freq_factor`` and ``high_freq_factor``."""


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
    *,
    ramp: str = "index",
    truncate: bool = True,
    attention_factor: float | None = None,
    mscale: float = 0.0,
    mscale_all_dim: float = 0.0,
    low_freq_factor: float = LLAMA3_LOW,
    high_freq_factor: float = LLAMA3_HIGH,
    length: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """(θ after scaling, θ before it, the ramp γ per pair, the attention factor on q and k).

    ``original`` is L, ``alpha`` and ``beta`` are YaRN's β_slow and β_fast, ``length`` the
    number of tokens (``dynamic`` only). γ is 1 for a pair that keeps its speed and 0 for
    one divided by the factor (yarn and llama3; zeros otherwise). Computed in float64 and
    returned in float32. With d = 2, ``ntk``'s and ``dynamic``'s base' is undefined
    (d/(d−2)) and not needed: the only pair turns at θ₀ = base^0 = 1 whatever the base.
    """
    i = torch.arange(d // 2, dtype=torch.float64)
    unscaled = base ** (-2 * i / d)
    gamma = torch.zeros_like(unscaled)
    temperature = 1.0
    if scaling == "linear":
        theta = unscaled / factor
    elif scaling == "ntk" and d > 2:
        theta = (base * factor ** (d / (d - 2))) ** (-2 * i / d)
    elif scaling == "dynamic" and d > 2 and length > original:
        stretched = base * (factor * length / original - (factor - 1)) ** (d / (d - 2))
        theta = stretched ** (-2 * i / d)
    elif scaling in ("yarn", "llama3"):
        if scaling == "yarn" and ramp == "index":
            low, high = correction_range(d, base, original, beta, alpha, truncate)[2:]
            gamma = ((high - i) / (high - low)).clamp(0.0, 1.0)
        else:
            low_turns, high_turns = (
                (low_freq_factor, high_freq_factor) if scaling == "llama3" else (alpha, beta)
            )
            gamma = ((turns(unscaled, original) - low_turns) / (high_turns - low_turns)).clamp(
                0.0, 1.0
            )
        theta = (1 - gamma) * unscaled / factor + gamma * unscaled
        if scaling == "yarn":
            temperature = yarn_attention_factor(factor, attention_factor, mscale, mscale_all_dim)
    else:
        theta = unscaled
    return theta.float(), unscaled.float(), gamma.float(), temperature


def turns(theta: torch.Tensor, original: int) -> torch.Tensor:
    """rᵢ = L/λᵢ = L·θᵢ/2π: how many whole turns each pair makes over L positions."""
    return original * theta / (2 * math.pi)


def correction_pair(turned: float, d: int, base: float, original: int) -> float:
    """The pair index i, as a fraction, at which a pair turns exactly ``turned`` times over L.

    From r = L·base^(−2i/d)/2π = turned: i = d·ln(L/(2π·turned)) / (2·ln base).
    """
    return d * math.log(original / (2 * math.pi * turned)) / (2 * math.log(base))


def correction_range(
    d: int, base: float, original: int, fast: float, slow: float, truncate: bool = True
) -> tuple[float, float, float, float]:
    """(i(β_fast), i(β_slow), the ramp's first pair, its last): the index ramp of YaRN.

    γ is 1 up to the first and 0 from the last, linear in the index between them. The
    bounds are rounded outward (``truncate``), clipped to [0, d − 1], and kept apart by
    0.001 where they meet, all as transformers does.
    """
    fast_pair, slow_pair = (
        correction_pair(fast, d, base, original),
        correction_pair(slow, d, base, original),
    )
    low, high = (
        (math.floor(fast_pair), math.ceil(slow_pair)) if truncate else (fast_pair, slow_pair)
    )
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    return fast_pair, slow_pair, float(low), float(high)


def yarn_attention_factor(
    factor: float, given: float | None = None, mscale: float = 0.0, mscale_all_dim: float = 0.0
) -> float:
    """YaRN's factor on the cos and sin: ``given``, else 0.1·ln(s) + 1 (1 for s ≤ 1), else,
    when both ``mscale`` and ``mscale_all_dim`` are set (DeepSeek's configurations), the ratio
    (0.1·mscale·ln(s) + 1) / (0.1·mscale_all_dim·ln(s) + 1)."""
    if given is not None:
        return given

    def term(weight: float) -> float:
        return 1.0 if factor <= 1 else 0.1 * weight * math.log(factor) + 1.0

    if mscale and mscale_all_dim:
        return term(mscale) / term(mscale_all_dim)
    return term(1.0)


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
