"""Independent answers to the live quizzes of lessons 16-18 (rotary embeddings, latent
attention, the paged cache), from the formulas and the lessons' own sizes, never by running
the variants."""

from __future__ import annotations

import math
from collections.abc import Callable

BASE, D = 10000.0, 8  # lesson 16: base 10000, d_out 8 (four pairs)
HEADS, HEAD_DIM, RANK, ROPE_DIM = 4, 2, 3, 2  # lesson 17: d_out 8 split into 4 heads
BLOCK = 2  # lesson 18


def theta(i: int) -> float:
    return BASE ** (-2 * i / D)


def yarn_ramp(i: int, context: int = 2048, fast: float = 32.0, slow: float = 1.0) -> float:
    """YaRN's γ for pair i as transformers ramps it: the pair indices where r = L·θ/2π equals
    β_fast and β_slow, rounded outward, and a straight line in the index between them."""

    def pair_turning(r: float) -> float:  # solve L·BASE^(−2j/D)/2π = r for j
        return D * math.log(context / (2 * math.pi * r)) / (2 * math.log(BASE))

    a, b = math.floor(pair_turning(fast)), math.ceil(pair_turning(slow))
    return min(max((b - i) / (b - a), 0.0), 1.0)


LATE_ORACLES: dict[tuple[str, str], Callable[[], float]] = {
    ("16_rotary", "angle-with"): lambda: 3 * theta(1),  # "with" is token 3
    ("16_rotary", "linear-theta-1"): lambda: theta(1) / 4,
    ("16_rotary", "yarn-ramp-2"): lambda: yarn_ramp(2),
    ("16_rotary", "yarn-temperature"): lambda: 0.1 * math.log(4) + 1,
    ("17_latent_attention", "cache-mha"): lambda: 2 * HEADS * HEAD_DIM,
    ("17_latent_attention", "cache-gqa"): lambda: 2 * 2 * HEAD_DIM,  # kv_heads = 2
    ("17_latent_attention", "cache-mla"): lambda: RANK + ROPE_DIM,
    ("17_latent_attention", "absorbed-width"): lambda: RANK,
    ("18_paged_cache", "entry-one"): lambda: 4 // BLOCK,  # "one" is token 4
    ("18_paged_cache", "slot-one"): lambda: 4 % BLOCK,
}
