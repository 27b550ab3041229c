"""Rotary position embeddings (RoPE) on scaled dot-product attention with trainable weights.

Attention as in the trainable-weights notebook has no notion of where a token
is: shuffle the tokens and every score moves with them. Rotary embeddings give
it one by turning each query and each key by an angle that grows with its
position, pair of features by pair of features, before the scores are taken.
Because a turn of m·θ against a turn of n·θ leaves a turn of (n − m)·θ between
them, the scores depend on the distance between two tokens and not on where
they stand. ``_rotary.py`` beside this file has the angles, the pairing
conventions and the scalings (``-o scaling=linear|ntk|dynamic|yarn|llama3
-o factor=4``), computed as Hugging Face transformers computes them, with its
option names (``original_max_position_embeddings``, ``beta_fast``, ...).
``-o rope_scaling=config.json`` reads them from a model's configuration (see
``_rope_config.py``).

Defaults: base 10000, no scaling, factor 4, interleaved pairs; for the scalings,
L = 2048 original positions, YaRN's β_fast = 32 and β_slow = 1 with the ramp
linear in the pair index (transformers'; ``-o ramp=turns`` is the YaRN paper's
printed equation) and the attention factor 0.1·ln(s) + 1, Llama 3's
low_freq_factor 1 and high_freq_factor 4.

The weights are those of ``trainable`` for the same ``--seed``, ``--init`` and
``--d-out`` (even: the features come in pairs). Positions count from 0.
"""

import math

import torch
from tracer.builtin_plugins import _rope_config
from tracer.builtin_plugins._rotary import (
    LLAMA3_HIGH,
    LLAMA3_LOW,
    PAIRINGS,
    RAMPS,
    SCALINGS,
    YARN_ALPHA,
    YARN_BETA,
    YARN_CONTEXT,
    angles,
    correction_range,
    frequencies,
    pairs,
    rotate,
    turns,
)

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
from tracer.errors import InputError, Location, UsageError

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
        "stretching a trained context, as transformers' rope_type: none, linear (position "
        "interpolation), ntk (base' = base·factor^(d/(d−2))), dynamic (ntk by how much longer "
        "the text is than L), yarn (per-pair ramp and attention factor), llama3 (Llama 3.1's "
        "per-pair ramp)",
        choices=SCALINGS,
    ),
    Option(
        "factor",
        float,
        4.0,
        "how many times longer the stretched context is (every scaling)",
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
    Option(
        "original_max_position_embeddings",
        int,
        YARN_CONTEXT,
        "L, the context the model was trained on (yarn, llama3; dynamic's max_position_embeddings)",
        min=1,
    ),
    Option(
        "ramp",
        str,
        "index",
        "yarn's ramp between beta_fast and beta_slow: index (linear in the pair index, as "
        "transformers and the YaRN authors' code) or turns (linear in r = L/λ, the YaRN paper's "
        "equation as printed)",
        choices=RAMPS,
    ),
    Option(
        "beta_fast",
        float,
        YARN_BETA,
        "yarn: pairs turning more than this many times over L keep their speed",
        min=1e-3,
    ),
    Option(
        "beta_slow",
        float,
        YARN_ALPHA,
        "yarn: pairs turning fewer than this many times over L are interpolated",
        min=1e-3,
    ),
    Option(
        "truncate",
        bool,
        True,
        "yarn's index ramp: round its first pair down and its last up (transformers' default)",
    ),
    Option(
        "attention_factor",
        float,
        0.0,
        "yarn: multiplies the cos and the sin; 0 (the default) means transformers' default, "
        "0.1·ln(factor) + 1, or the mscale ratio when mscale and mscale_all_dim are set",
        min=0.0,
    ),
    Option(
        "mscale",
        float,
        0.0,
        "yarn (DeepSeek's configs): with mscale_all_dim, the default attention factor is "
        "(0.1·mscale·ln s + 1)/(0.1·mscale_all_dim·ln s + 1); 0: unset",
        min=0.0,
    ),
    Option(
        "mscale_all_dim",
        float,
        0.0,
        "yarn (DeepSeek's configs): see mscale; 0: unset",
        min=0.0,
    ),
    Option(
        "low_freq_factor",
        float,
        LLAMA3_LOW,
        "llama3: pairs turning fewer than this many times over L are interpolated",
        min=0.0,
    ),
    Option(
        "high_freq_factor",
        float,
        LLAMA3_HIGH,
        "llama3: pairs turning more than this many times over L keep their speed",
        min=0.0,
    ),
    Option(
        "rope_scaling",
        str,
        "",
        "a model's config.json, a file holding a transformers rope_scaling mapping, or the "
        "mapping inline ('{rope_type: yarn, factor: 4}'): sets the options above as it does "
        "(empty, the default: none)",
    ),
)
SCALING_OPTIONS = {
    "linear": ("factor",),
    "ntk": ("factor",),
    "dynamic": ("factor", "original_max_position_embeddings"),
    "yarn": (
        "factor",
        "original_max_position_embeddings",
        "ramp",
        "beta_fast",
        "beta_slow",
        "truncate",
        "attention_factor",
        "mscale",
        "mscale_all_dim",
    ),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
}
"""The options each scaling reads; setting one a scaling does not read is an error."""


def settings(run: RunContext, d: int) -> dict:
    """The rotary settings of ``run`` as ``frequencies`` takes them (``base`` included),
    with a ``rope_scaling`` mapping applied, checked against the head width ``d``."""
    if d % 2:
        raise UsageError(
            f"--d-out {d} is odd: rotary embeddings turn the features in pairs "
            f"(try --d-out {d + 1})"
        )
    o = dict(run.options)
    if o["rope_scaling"]:
        o.update(from_rope_scaling(run, o["rope_scaling"]))
    scaling = o["scaling"]
    read = SCALING_OPTIONS.get(scaling, ())
    for option in OPTIONS:
        name = option.name
        if name in read or name in ("base", "scaling", "pairing", "factor", "rope_scaling"):
            continue
        if o[name] != option.default:
            used = "|".join(each for each, names in SCALING_OPTIONS.items() if name in names)
            raise UsageError(f"-o {name} applies to -o scaling={used}, not scaling={scaling}")
    if scaling == "yarn" and o["beta_fast"] <= o["beta_slow"]:
        raise UsageError(
            f"-o beta_fast {o['beta_fast']:g} must be above -o beta_slow {o['beta_slow']:g}: "
            "pairs turning more than beta_fast times keep their speed, fewer than beta_slow "
            "are interpolated"
        )
    if scaling == "llama3" and o["high_freq_factor"] <= o["low_freq_factor"]:
        raise UsageError(
            f"-o high_freq_factor {o['high_freq_factor']:g} must be above -o low_freq_factor "
            f"{o['low_freq_factor']:g}"
        )
    return {
        "base": o["base"],
        "scaling": scaling,
        "factor": o["factor"],
        "original": o["original_max_position_embeddings"],
        "alpha": o["beta_slow"],
        "beta": o["beta_fast"],
        "ramp": o["ramp"],
        "truncate": o["truncate"],
        "attention_factor": o["attention_factor"] or None,
        "mscale": o["mscale"],
        "mscale_all_dim": o["mscale_all_dim"],
        "low_freq_factor": o["low_freq_factor"],
        "high_freq_factor": o["high_freq_factor"],
        "length": run.inputs.shape[0],
    }


def from_rope_scaling(run: RunContext, spec: str) -> dict:
    """The options a transformers ``rope_scaling`` mapping sets, each checked against its
    declaration; one also given as an option, with another value, is an error."""
    found, source = _rope_config.read(spec)
    declared = {option.name: option for option in OPTIONS}
    values = {}
    for name, (value, where) in found.items():
        option = declared[name]
        key = {"base": "rope_theta", "scaling": "rope_type"}.get(name, name)
        shown = f"{value:g}" if isinstance(value, float) else str(value).lower()
        if option.min is not None and value < option.min:
            raise bad(f"{key} must be at least {option.min:g}, got {shown}", where, source)
        if option.max is not None and value > option.max:
            raise bad(f"{key} must be at most {option.max:g}, got {shown}", where, source)
        given = run.options[name]
        if given != option.default and given != value:
            given_shown = f"{given:g}" if isinstance(given, float) else str(given).lower()
            raise UsageError(
                f"-o {name}={given_shown} disagrees with {source}'s {key} {shown}; give one of them"
            )
        values[name] = float(value) if option.type is float else value
    return values


def bad(message: str, where: Location | None, source: str) -> Exception:
    """An error in a rope_scaling file at ``where``, or in an inline mapping."""
    return InputError(message, where) if where is not None else UsageError(f"{source}: {message}")


def angles_formula(d: int, scaling: dict) -> str:
    """The angles stage's formula for these settings, with their numbers."""
    kind, base, s = scaling["scaling"], scaling["base"], scaling["factor"]
    L = scaling["original"]
    if kind == "linear":
        return f"θᵢ = {base:g}^(−2i/{d}) / {s:g}  (position interpolation)"
    if kind in ("ntk", "dynamic") and d == 2:
        return "θ₀ = base'^0 = 1: the only pair's speed does not depend on the base"
    if kind == "ntk":
        return f"θᵢ = base'^(−2i/{d}),  base' = {base:g} · {s:g}^({d}/{d - 2})"
    if kind == "dynamic":
        n = scaling["length"]
        if n <= L:
            return (
                f"θᵢ = {base:g}^(−2i/{d}): a text of n = {n} tokens, at most L = {L}, "
                "is not scaled (dynamic scales only longer ones)"
            )
        return (
            f"θᵢ = base'^(−2i/{d}),  base' = {base:g} · ({s:g}·{n}/{L} − {s - 1:g})^({d}/{d - 2})"
        )
    mix = f"θ'ᵢ = (1 − γᵢ)·θᵢ/{s:g} + γᵢ·θᵢ,  θᵢ = {base:g}^(−2i/{d}),  rᵢ = {L}·θᵢ/2π"
    if kind == "llama3":
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        return f"{mix},  γᵢ = clamp((rᵢ − {low:g})/({high:g} − {low:g}), 0, 1)"
    if kind == "yarn" and scaling["ramp"] == "turns":
        slow, fast = scaling["alpha"], scaling["beta"]
        return (
            f"{mix},  γᵢ = clamp((rᵢ − {slow:g})/({fast:g} − {slow:g}), 0, 1)  (the paper's ramp)"
        )
    if kind == "yarn":
        fast_pair, slow_pair, low, high = correction_range(
            d, base, L, scaling["beta"], scaling["alpha"], scaling["truncate"]
        )
        fast, slow = scaling["beta"], scaling["alpha"]
        if scaling["truncate"]:
            first, last = math.floor(fast_pair), math.ceil(slow_pair)
            a = f"⌊i({fast:g})⌋ = ⌊{fast_pair:.2f}⌋ = {first}"
            b = f"⌈i({slow:g})⌉ = ⌈{slow_pair:.2f}⌉ = {last}"
        else:
            first, last = fast_pair, slow_pair
            a, b = f"i({fast:g}) = {fast_pair:.2f}", f"i({slow:g}) = {slow_pair:.2f}"
        a += "" if low == first else f", clipped to {low:g}"
        b += "" if high == last else f", moved to {high:g}"
        bounds = f"a = {a},  b = {b}"
        return (
            f"{mix},  γᵢ = clamp((b − i)/(b − a), 0, 1),  {bounds}  "
            f"(i(r): the pair that turns r times over {L})"
        )
    return f"θᵢ = {base:g}^(−2i/{d})"


def rope(run: RunContext):
    inputs, W = run.inputs, run.weights
    n, d = inputs.shape[0], W.query.shape[1]
    scaling = settings(run, d)
    pairing = run.options["pairing"]
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

    theta, unscaled, ramp, temperature = frequencies(d, **scaling)
    first, second = pairs(d, pairing)
    shown, formula = {"theta": theta}, angles_formula(d, scaling)
    kind = scaling["scaling"]
    if kind in ("yarn", "llama3"):
        shown["turns"] = turns(unscaled.double(), scaling["original"]).float()
        shown["ramp"] = ramp
    if kind == "yarn":
        shown["temperature"] = torch.tensor(temperature)
    if kind != "none":
        shown["unscaled"] = unscaled
    shown["first"] = first
    shown["second"] = second
    # One title for every tensor of the stage: each is named by what it holds (a table shows
    # the stage's title over whichever tensor a lesson picks, the ramp γ included).
    held = ["theta, how fast each pair turns, in radians per position"]
    held += ["unscaled, that speed before scaling"] if "unscaled" in shown else []
    held += ["turns, how often it turns over the original context"] if "turns" in shown else []
    held += ["ramp, the share of its own speed it keeps"] if "ramp" in shown else []
    held += ["temperature, the attention factor"] if "temperature" in shown else []
    yield stage(
        "angles",
        f"The {d // 2} pairs of features ({pairing} pairs: feature first[i] turns with "
        f"second[i]): "
        + "; ".join(held)
        + ("; with the settings -o rope_scaling gave" if run.options["rope_scaling"] else ""),
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
                + (f", times the attention factor {temperature:.4f}" if temperature != 1.0 else ""),
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
        + (
            f", both scaled by the attention factor {temperature:.4f}" if temperature != 1.0 else ""
        ),
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
    theta, unscaled, _, temperature = frequencies(d, **scaling)
    if keys_only and torch.equal(theta, unscaled) and temperature == 1.0:
        return {}  # nothing scaled (dynamic on a short text): the mistake changes nothing
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
        "scale the angles (and, for yarn, the attention factor) of the queries exactly as those of "
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
            "-o scaling=none|linear|ntk|dynamic|yarn|llama3 with -o factor=4, computed as "
            "Hugging Face transformers does (yarn: L = 2048, beta_fast 32, beta_slow 1, the "
            "ramp linear in the pair index; -o ramp=turns for the paper's); "
            "-o rope_scaling=config.json reads a model's settings.",
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
