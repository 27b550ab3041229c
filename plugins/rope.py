"""Rotary position embeddings (RoPE) on scaled dot-product attention with trainable weights.

Attention as in the trainable-weights notebook has no notion of where a token
is: shuffle the tokens and every score moves with them. Rotary embeddings give
it one by turning each query and each key by an angle that grows with its
position, pair of features by pair of features, before the scores are taken.
Because a turn of m·θ against a turn of n·θ leaves a turn of (n − m)·θ between
them, the scores depend on the distance between two tokens and not on where
they stand. ``_rotary.py`` beside this file has the angles, the pairing
conventions and the scalings (``-o scaling=linear|ntk|yarn -o factor=4``).

The weights are those of ``trainable`` for the same ``--seed``, ``--init`` and
``--d-out`` (even: the features come in pairs). Positions count from 0.
"""

import math

import torch
from tracer.builtin_plugins._rotary import PAIRINGS, SCALINGS, angles, frequencies, pairs, rotate

from tracer import (
    Cost,
    Dot,
    Mistake,
    Option,
    RunContext,
    Sizes,
    Variant,
    hookimpl,
    stage,
    substep,
)
from tracer.errors import UsageError

OPTIONS = (
    Option(
        "base",
        float,
        10000.0,
        "θᵢ = base^(−2i/d): a larger base turns the later pairs more slowly",
        min=2.0,
        max=1e12,
    ),
    Option(
        "scaling",
        str,
        "none",
        "stretching a trained context: none, linear (position interpolation), ntk "
        "(base' = base·factor^(d/(d−2))), yarn (per-pair ramp and temperature)",
        choices=SCALINGS,
    ),
    Option(
        "factor",
        float,
        4.0,
        "how many times longer the stretched context is (linear, ntk and yarn)",
        min=1.0,
        max=1e6,
    ),
    Option(
        "pairing",
        str,
        "interleaved",
        "which features turn together: interleaved (2i, 2i+1, the paper's) or half (i, i+d/2)",
        choices=PAIRINGS,
    ),
)


def settings(run: RunContext, d: int) -> dict:
    """The rotary settings of ``run``, checked against the head width ``d``."""
    o = run.options
    if d % 2:
        raise UsageError(
            f"--d-out {d} is odd: rotary embeddings turn the features in pairs "
            f"(try --d-out {d + 1})"
        )
    return {"scaling": o["scaling"], "factor": o["factor"]}


def rope(run: RunContext):
    inputs, W = run.inputs, run.weights
    n, d = inputs.shape[0], W.query.shape[1]
    scaling = settings(run, d)
    pairing, base = run.options["pairing"], run.options["base"]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    queries, keys, values = inputs @ W.query, inputs @ W.key, inputs @ W.value
    yield stage(
        "queries",
        "Queries, before any rotation",
        formula="Q = X W_q",
        axes=("query", "feature"),
        queries=run.focus(queries),
    )
    yield stage(
        "keys", "Keys, before any rotation", formula="K = X W_k", axes=("key", "feature"), keys=keys
    )
    yield stage(
        "values",
        "Values: never rotated",
        formula="V = X W_v",
        axes=("key", "feature"),
        values=values,
    )

    theta, unscaled, ramp, temperature = frequencies(d, base, **scaling)
    first, second = pairs(d, pairing)
    shown = {"theta": theta}
    formula = f"θᵢ = {base:g}^(−2i/{d})"
    if scaling["scaling"] == "linear":
        formula = f"θᵢ = {base:g}^(−2i/{d}) / {scaling['factor']:g}  (position interpolation)"
    elif scaling["scaling"] == "ntk" and d == 2:
        formula = "θ₀ = base'^0 = 1: the only pair's speed does not depend on the base"
    elif scaling["scaling"] == "ntk":
        formula = f"θᵢ = base'^(−2i/{d}),  base' = {base:g} · {scaling['factor']:g}^({d}/{d - 2})"
    elif scaling["scaling"] == "yarn":
        formula = (
            f"θᵢ = (1 − γᵢ)·θᵢ/{scaling['factor']:g} + γᵢ·θᵢ,  γᵢ = clamp((L/λᵢ − α)/(β − α), 0, 1)"
        )
        shown["ramp"] = ramp
        shown["temperature"] = torch.tensor(temperature)
    if scaling["scaling"] != "none":
        shown["unscaled"] = unscaled
    shown["first"] = first
    shown["second"] = second
    yield stage(
        "angles",
        f"How fast each of the {d // 2} pairs of features turns, in radians per position "
        f"({pairing} pairs: feature first[i] turns with second[i])",
        formula=formula,
        axes={name: () if name == "temperature" else ("pair",) for name in shown},
        **shown,
    )

    positions = torch.arange(n)
    turn = angles(positions, theta)
    yield stage(
        "positions",
        "The angle each token's pairs are turned by: its position times the pair's speed",
        formula="angle[m, i] = m · θᵢ  (positions m = 0, 1, 2, ...)",
        axes=("token", "pair"),
        angle=turn,
        cos=torch.cos(turn),
        sin=torch.sin(turn),
    )

    rotated_queries = torch.empty_like(queries)
    rotated_keys = torch.empty_like(keys)
    for m in range(n):
        for i in range(d // 2):
            a, b = int(first[i]), int(second[i])
            cos, sin = torch.cos(turn[m, i]), torch.sin(turn[m, i])
            rotation = torch.stack([torch.stack([cos, -sin]), torch.stack([sin, cos])])
            rotation = rotation * temperature
            query_pair = queries[m, [a, b]]
            key_pair = keys[m, [a, b]]
            turned_query = rotation @ query_pair
            turned_key = rotation @ key_pair
            rotated_queries[m, [a, b]] = turned_query
            rotated_keys[m, [a, b]] = turned_key
            yield substep(
                "rotated",
                (m, a),
                formula=f"token {m}, pair {i} (features {a}, {b}): turned by {m}·θ{i}"
                + (f", times the temperature {temperature:.4f}" if temperature != 1.0 else ""),
                axes={
                    "angle": (),
                    "rotation": ("row", "column"),
                    "row_first": ("column",),
                    "row_second": ("column",),
                    "query_pair": ("column",),
                    "key_pair": ("column",),
                    "query_first": (),
                    "query_second": (),
                    "key_first": (),
                    "key_second": (),
                },
                equations=(
                    Dot("row_first", "query_pair", "query_first"),
                    Dot("row_second", "query_pair", "query_second"),
                    Dot("row_first", "key_pair", "key_first"),
                    Dot("row_second", "key_pair", "key_second"),
                ),
                angle=turn[m, i],
                rotation=rotation,
                row_first=rotation[0],
                row_second=rotation[1],
                query_pair=query_pair,
                key_pair=key_pair,
                query_first=turned_query[0],
                query_second=turned_query[1],
                key_first=turned_key[0],
                key_second=turned_key[1],
            )
    yield stage(
        "rotated",
        "Rotated queries and keys: every pair of token m turned by m·θ"
        + (f", both scaled by the temperature {temperature:.4f}" if temperature != 1.0 else ""),
        formula="[x'ₐ, x'ᵦ] = [[cos mθᵢ, −sin mθᵢ], [sin mθᵢ, cos mθᵢ]] · [xₐ, xᵦ]",
        axes={"rotated_queries": ("query", "feature"), "rotated_keys": ("key", "feature")},
        rotated_queries=run.focus(rotated_queries),
        rotated_keys=rotated_keys,
    )

    scores = rotated_queries @ rotated_keys.T
    yield stage(
        "scores",
        "Scores of the rotated queries and keys: they depend on the distance n − m",
        formula="ω[m, n] = (R(mθ) q_m) · (R(nθ) k_n) = q_m · R((n − m)θ) k_n",
        axes=("query", "key"),
        scores=run.focus(scores),
    )
    scaled = scores / d**0.5
    yield stage(
        "scaled",
        "Scaled scores",
        formula=f"ω / √d_k,  d_k = {d}",
        axes=("query", "key"),
        scaled=run.focus(scaled),
    )
    weights = torch.softmax(scaled, dim=-1)
    yield stage(
        "weights",
        "Attention weights",
        formula="α = softmax(ω / √d_k, dim=-1)",
        axes=("query", "key"),
        weights=run.focus(weights),
    )
    context = run.focus(weights @ values)
    yield stage(
        "context", "Context vectors", formula="Z = α V", axes=("query", "feature"), context=context
    )
    return context


# Mistakes learners make with rotary embeddings, as the computation they amount to (attn
# check names one when it reproduces their numbers).
def rotary_attention(
    run: RunContext,
    *,
    pairing: str | None = None,
    query_start: int = 0,
    key_start: int = 0,
    keys_only: bool = False,
) -> dict:
    """The variant's tensors with one thing changed: the pairing, where positions start, or
    the scaling applied to the keys' angles only (the queries turned at the unscaled speed)."""
    inputs, W = run.inputs, run.weights
    n, d = inputs.shape[0], W.query.shape[1]
    scaling = settings(run, d)
    pairing = pairing or run.options["pairing"]
    theta, unscaled, _, temperature = frequencies(d, run.options["base"], **scaling)
    queries, keys, values = inputs @ W.query, inputs @ W.key, inputs @ W.value
    query_theta, query_temperature = (unscaled, 1.0) if keys_only else (theta, temperature)
    rotated_queries = rotate(
        queries, angles(torch.arange(n) + query_start, query_theta), pairing, query_temperature
    )
    rotated_keys = rotate(keys, angles(torch.arange(n) + key_start, theta), pairing, temperature)
    scores = rotated_queries @ rotated_keys.T
    weights = torch.softmax(scores / d**0.5, dim=-1)
    made = {"rotated_queries": rotated_queries, "rotated_keys": rotated_keys}
    if query_start == key_start:  # both from 1: every score is the same as from 0
        return made
    return {**made, "scores": scores, "weights": weights, "context": weights @ values}


MISTAKES = (
    Mistake(
        "rope-pairing",
        "features paired as halves (i with i + d/2, rotate_half) where this model pairs neighbours",
        "this model turns neighbouring features together: pair i is features 2i and 2i + 1 "
        "(x[..., 0::2] with x[..., 1::2]), not i and i + d/2.",
        lambda run: (
            rotary_attention(run, pairing="half") if run.options["pairing"] == "interleaved" else {}
        ),
        ops=("cat", "stack", "chunk", "split"),
    ),
    Mistake(
        "rope-pairing",
        "neighbouring features paired (2i with 2i + 1) where this model pairs halves",
        "this model turns feature i with feature i + d/2 (rotate_half), not neighbours.",
        lambda run: (
            rotary_attention(run, pairing="interleaved") if run.options["pairing"] == "half" else {}
        ),
        ops=("cat", "stack", "chunk", "split"),
    ),
    Mistake(
        "rope-positions",
        "positions counted from 1 for the keys but from 0 for the queries",
        "number the queries' and the keys' positions alike (torch.arange(n) for both): "
        "a key one place further along is a different distance.",
        lambda run: rotary_attention(run, key_start=1),
        ops=("arange",),
    ),
    Mistake(
        "rope-positions",
        "positions counted from 1",
        "positions count from 0 (torch.arange(n)). Counting both from 1 turns every query and "
        "key one step further and leaves every score as it was, which is why it goes unnoticed.",
        lambda run: rotary_attention(run, query_start=1, key_start=1),
        ops=("arange",),
    ),
    Mistake(
        "rope-scaling-keys-only",
        "the scaling applied to the keys' angles only",
        "scale the angles (and, for yarn, the temperature) of the queries exactly as those of "
        "the keys: scores then depend on the distance alone.",
        lambda run: (
            rotary_attention(run, keys_only=True) if run.options["scaling"] != "none" else {}
        ),
        ops=("div", "__truediv__", "matmul", "__matmul__"),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """Scores, scaled scores and weights, tokens x tokens each even with one query followed
    (the keys need every token), one sub-step per (token, pair), and ntk's base'."""
    n, d, o = sizes.tokens, sizes.d_out, sizes.options
    exponent = d / (d - 2) if o["scaling"] == "ntk" and d > 2 else 0.0
    power = math.log(o["base"]) + exponent * math.log(o["factor"])  # log of base'
    return Cost(
        substeps=n * (d // 2),
        values=17 * n * (d // 2),
        elements=4 * n * n + n * (sizes.d_in + 8 * d) + 3 * sizes.d_in * d,
        table=max(n * n, n * (sizes.d_in + d), sizes.d_in * d),
        largest=math.exp(power) if power < 709 else math.inf,
        smaller=("base", "factor", "d_out"),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="rope",
            title="Rotary position embeddings: queries and keys turned by their position",
            description="Even --d-out (pairs of features); -o pairing=interleaved|half, "
            "-o scaling=none|linear|ntk|yarn with -o factor=4 (yarn: L = 2048, α = 1, β = 32).",
            run=rope,
            cost=cost,
            options=OPTIONS,
            mistakes=MISTAKES,
            stages=(
                "inputs",
                "queries",
                "keys",
                "values",
                "angles",
                "positions",
                "rotated",
                "scores",
                "scaled",
                "weights",
                "context",
            ),
            loops=("rotated",),
        )
    )
