"""Multi-head latent attention: keys and values rebuilt from a small latent per token.

Multi-head attention caches a key and a value per head for every token, 2·d_out
numbers. Latent attention, as in the DeepSeek-V2 paper, caches one short vector
per token instead, the latent c = x W_dkv (``-o rank=`` numbers), and rebuilds
every head's keys and values from it: K = c W_uk, V = c W_uv.

Position enters through rotary embeddings (``rope``), but a rotation sits
between the query and the key and cannot be folded into W_uk. So the rotary part
of the key is kept apart: a small key k_rope = x W_kr (``-o rope_dim=`` numbers,
shared by every head) is rotated and cached beside the latent, each head has a
rotary query part x W_qr of the same width, and a head's query and key are the
concatenations [q_nope, q_rope] and [k_nope, k_rope].

``-o absorb=true`` computes what an inference engine computes. The score of the
no-rope parts is q·(c W_uk)ᵀ = (q W_ukᵀ)·cᵀ, so W_uk is folded into the
queries and the scores are taken against the latents themselves; the values
are mixed as latents and W_uv is folded into the output projection
(W_uv W_out per head). Nothing is rounded away: the result is the same output,
and a last stage shows both routes and their difference.

Where it differs from DeepSeek-V3's attention (as Hugging Face transformers'
``DeepseekV3Attention`` computes it), by default, and the option that closes the gap:

- DeepSeek normalises the latent with an RMSNorm before rebuilding the keys and values
  (and the query latent, below): ``-o latent_norm=true`` (its learnt scale is 1 here, the
  value transformers starts it at; ε = 1e-6).
- DeepSeek-V3 compresses the queries too, q = RMSNorm(x W_dq) W_uq, with a query latent of
  ``q_lora_rank`` numbers (1536 in V3), and takes the rotary query part from that latent:
  ``-o q_lora_rank=R``. By default the queries are the tool's own full-rank W_query.
- DeepSeek sets the value heads' width on its own (``v_head_dim``; 128 in V3, as wide as a
  head's no-rope part, beside 128 + 64 for its query and key): ``-o v_head_dim=N``. By
  default it is the head width, which is also V3's proportion.
- DeepSeek's output projection has no bias: ``-o out_bias=false``. It maps back to the
  model's width; here it maps to d_out, the width of every variant's context.
- DeepSeek-V3 stretches its rotary part with YaRN (``rope -o rope_scaling=config.json``
  shows those angles) and then multiplies the softmax scale by (0.1·mscale_all_dim·ln s +
  1)²; here the rotary part is unscaled, base 10000, with neighbouring features paired
  (DeepSeek-V3's ``rope_interleave``).

With these options set as a DeepSeek configuration sets them, and d_out as wide as the
inputs, the attention weights and the output match transformers' ``DeepseekV3Attention``
given the same weights, to float32 rounding (tests/variants/test_mla_conventions.py).

Weights: W_query is the tool's own query projection (``trainable``'s for the
same ``--seed``, ``--init``, ``--d-out``); W_dkv, W_uk, W_uv, W_qr, W_kr and the
output projection are drawn after the tool's three under the same seed (``randn``
for ``--init randn``, ``rand`` otherwise, and for weights from a file), and after them
W_dq and W_uq when ``q_lora_rank`` is set. The attention is causal, as in the decoders
that use it.
"""

import torch
from tracer.builtin_plugins._rotary import angles, frequencies, rotate

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage
from tracer.errors import UsageError

OPTIONS = (
    Option(
        "heads", int, 2, "number of heads (--heads N for short); divides --d-out", min=1, max=64
    ),
    Option("rank", int, 2, "width of the latent c each token caches", min=1, max=4096),
    Option(
        "rope_dim",
        int,
        2,
        "width of the decoupled rotary part of each query and of the shared key (even)",
        min=2,
        max=4096,
    ),
    Option("absorb", bool, False, "fold W_uk into the queries and W_uv into the output"),
    Option(
        "latent_norm",
        bool,
        False,
        "RMSNorm on the latent (and on the query latent), as DeepSeek-V2/V3",
    ),
    Option(
        "q_lora_rank",
        int,
        0,
        "width of a query latent, q = x W_dq W_uq, as DeepSeek-V3 (0: full-rank W_query)",
        min=0,
        max=4096,
    ),
    Option(
        "v_head_dim",
        int,
        0,
        "width of each value head, as DeepSeek's v_head_dim (0: the head width)",
        min=0,
        max=4096,
    ),
    Option("out_bias", bool, True, "a bias on the output projection (DeepSeek has none)"),
)
EPS = 1e-6
"""The RMSNorm's ε, DeepSeek's."""
BASE = 10000.0


def shapes(run: RunContext) -> tuple[int, int, int, int]:
    """(heads, head_dim, rank, rope_dim), checked."""
    heads, rank, rope_dim = run.options["heads"], run.options["rank"], run.options["rope_dim"]
    d_out = run.weights.query.shape[1]
    if d_out % heads:
        raise UsageError(
            f"--d-out {d_out} is not divisible by --heads {heads}: mla splits d_out into "
            f"{heads} equal heads"
        )
    if rope_dim % 2:
        raise UsageError(
            f"rope_dim {rope_dim} is odd: rotary embeddings turn the features in pairs "
            f"(try -o rope_dim={rope_dim + 1})"
        )
    return heads, d_out // heads, rank, rope_dim


def value_dim(run: RunContext, head_dim: int) -> int:
    """The width of each value head: ``v_head_dim``, or the head width."""
    return run.options["v_head_dim"] or head_dim


def latent_weights(run: RunContext, heads: int, rank: int, rope_dim: int) -> dict:
    """W_query (or W_dq and W_uq), W_dkv, W_uk, W_uv, W_qr, W_kr, W_out and b_out (where
    ``out_bias``), all applied as ``x @ W``."""
    d_in, d_out = run.weights.query.shape
    v_width = heads * value_dim(run, d_out // heads)
    q_rank = run.options["q_lora_rank"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(run.seed)
        draw = torch.randn if run.init == "randn" else torch.rand
        for _ in range(3):  # the tool's W_query, W_key, W_value come first under this seed
            draw(d_in, d_out)
        made = {
            "W_query": run.weights.query,
            "W_dkv": draw(d_in, rank),
            "W_uk": draw(rank, d_out),
            "W_uv": draw(rank, v_width),
            "W_qr": draw(q_rank or d_in, heads * rope_dim),  # from the query latent, if any
            "W_kr": draw(d_in, rope_dim),
            "W_out": draw(v_width, d_out),
            "b_out": draw(d_out),
        }
        if q_rank:
            del made["W_query"]
            made["W_dq"], made["W_uq"] = draw(d_in, q_rank), draw(q_rank, d_out)
    if not run.options["out_bias"]:
        del made["b_out"]
    return made


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    """x / √(mean(x²) + ε) over the last axis; the learnt scale is 1."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


def queries_of(run: RunContext, W: dict, heads: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(what the no-rope and rotary query parts are projected from, the query latent or None):
    the inputs, or with ``q_lora_rank`` the query latent x W_dq (normalised with
    ``latent_norm``)."""
    if "W_dq" not in W:
        return run.inputs, None
    latent = run.inputs @ W["W_dq"]
    return (rms_norm(latent) if run.options["latent_norm"] else latent), latent


def split(t: torch.Tensor, heads: int) -> torch.Tensor:
    """(tokens, heads·w) -> (heads, tokens, w)."""
    return t.view(t.shape[0], heads, -1).transpose(0, 1)


def focus(run: RunContext, per_head: torch.Tensor) -> torch.Tensor:
    """Row ``query`` of each head when a query is focused."""
    return per_head if run.query is None else per_head[:, run.query]


def mla(run: RunContext):
    heads, head_dim, rank, rope_dim = shapes(run)
    absorb, normed = run.options["absorb"], run.options["latent_norm"]
    v_dim = value_dim(run, head_dim)
    inputs = run.inputs
    n, d_out = inputs.shape[0], heads * head_dim
    rows = ("query",) if run.query is None else ()
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    W = latent_weights(run, heads, rank, rope_dim)
    q_rank = run.options["q_lora_rank"]
    query_part = (
        f"query down- and up-projection through a latent of {q_rank}"
        if q_rank
        else "Query projection"
    )
    axes = {
        "W_query": ("feature", "feature"),
        "W_dkv": ("feature", "latent"),
        "W_uk": ("latent", "feature"),
        "W_uv": ("latent", "feature"),
        "W_qr": ("latent" if q_rank else "feature", "feature"),
        "W_kr": ("feature", "feature"),
        "W_out": ("feature", "feature"),
        "b_out": ("feature",),
        "W_dq": ("feature", "latent"),
        "W_uq": ("latent", "feature"),
    }
    yield stage(
        "projections",
        f"{query_part[0].upper()}{query_part[1:]}, down-projection to a latent of {rank}, "
        f"up-projections back to {heads} head{'s' * (heads != 1)} of {head_dim}"
        + (f" (values of {v_dim})" if v_dim != head_dim else "")
        + ", the rotary projections, and the output projection"
        + ("" if "b_out" in W else " (no bias)"),
        axes={name: axes[name] for name in W},
        **W,
    )

    theta, _, _, _ = frequencies(rope_dim, BASE)
    turn = angles(torch.arange(n), theta)
    raw_latent = inputs @ W["W_dkv"]
    latent = rms_norm(raw_latent) if normed else raw_latent
    key_rope = rotate(inputs @ W["W_kr"], turn, "interleaved")
    before = {"latent_before_norm": raw_latent} if normed else {}
    yield stage(
        "latent",
        f"What the cache keeps per token: the latent ({rank} numbers"
        + (", normalised" if normed else "")
        + f") and the rotated rotary key ({rope_dim})",
        formula=(
            "c = RMSNorm(X W_dkv),  k_rope = RoPE(X W_kr)"
            if normed
            else "c = X W_dkv,  k_rope = RoPE(X W_kr)"
        ),
        axes={"latent": ("key", "latent"), "key_rope": ("key", "feature")}
        | {name: ("key", "latent") for name in before},
        latent=latent,
        key_rope=key_rope,
        **before,
    )

    source, query_latent = queries_of(run, W, heads)
    query_nope = split(source @ (W["W_uq"] if q_rank else W["W_query"]), heads)
    query_rope = rotate(split(source @ W["W_qr"], heads), turn, "interleaved")
    shown = {"query_nope": focus(run, query_nope), "query_rope": focus(run, query_rope)}
    formula = "q_nope = X W_q,  q_rope = RoPE(X W_qr),  per head"
    if query_latent is not None:
        shown["query_latent"] = run.focus(source)
        norm = "RMSNorm(X W_dq)" if normed else "X W_dq"
        formula = f"c_q = {norm},  q_nope = c_q W_uq,  q_rope = RoPE(c_q W_qr),  per head"
    yield stage(
        "queries",
        "Each head's query: a part matched against the latent's keys, a rotated part "
        "matched against the rotary key"
        + (f", both from a query latent of {q_rank}" if q_rank else ""),
        formula=formula,
        axes={
            name: (*rows, "latent") if name == "query_latent" else ("head", *rows, "feature")
            for name in shown
        },
        **shown,
    )

    W_uk, W_uv = W["W_uk"].view(rank, heads, head_dim), W["W_uv"].view(rank, heads, v_dim)
    W_uk, W_uv = W_uk.permute(1, 0, 2), W_uv.permute(1, 0, 2)  # (heads, rank, width)
    scale = (head_dim + rope_dim) ** -0.5
    rope_scores = query_rope @ key_rope.T  # every head against the one shared rotary key
    if absorb:
        absorbed = query_nope @ W_uk.transpose(1, 2)  # (heads, tokens, rank)
        yield stage(
            "absorbed",
            "W_uk folded into the queries: each head's query now lives in the latent's space",
            formula="q̃_h = q_nope,h W_uk,hᵀ   (so q_nope,h · k_h = q̃_h · c)",
            axes=("head", *rows, "latent"),
            absorbed_queries=focus(run, absorbed),
        )
        scores = (absorbed @ latent.T + rope_scores) * scale
        formula = "ω_h = (q̃_h cᵀ + q_rope,h k_ropeᵀ) / √(head_dim + rope_dim)"
    else:
        keys = latent @ W_uk  # (heads, tokens, head_dim)
        values = latent @ W_uv  # (heads, tokens, v_dim)
        yield stage(
            "keys_values",
            "Each head's keys and values, rebuilt from the latent",
            formula="K_h = c W_uk,h,  V_h = c W_uv,h",
            axes=("head", "key", "feature"),
            keys=keys,
            values=values,
        )
        scores = (query_nope @ keys.transpose(1, 2) + rope_scores) * scale
        formula = "ω_h = [q_nope,h, q_rope,h] · [k_h, k_rope]ᵀ / √(head_dim + rope_dim)"
    yield stage(
        "scaled",
        f"Scaled scores per head: the no-rope part plus the rotary part, over "
        f"√{head_dim + rope_dim}",
        formula=formula,
        axes=("head", *rows, "key"),
        scaled=focus(run, scores),
    )

    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if run.padding is not None:
        mask = mask | torch.tensor(run.padding)
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1).nan_to_num(0.0)
    yield stage(
        "weights",
        "Causal attention weights, per head",
        formula="α_h = softmax(masked ω_h, dim=-1)",
        axes=("head", *rows, "key"),
        weights=focus(run, weights),
    )

    W_out = W["W_out"].view(heads, v_dim, d_out)  # rows h·v_dim .. belong to head h
    bias = W.get("b_out")
    plus_bias = " + b_o" if bias is not None else ""
    if absorb:
        mixed = weights @ latent  # (heads, tokens, rank): the latents mixed, not the values
        folded = W_uv @ W_out  # (heads, rank, d_out): W_uv,h W_out,h
        yield stage(
            "head_context",
            "Each head mixes the latents; W_uv is folded into the output projection",
            formula="Z_h = α_h c,  W̃_h = W_uv,h W_out,h",
            axes={
                "latent_context": ("head", *rows, "latent"),
                "folded": ("head", "latent", "feature"),
            },
            latent_context=focus(run, mixed),
            folded=folded,
        )
        output = (mixed @ folded).sum(dim=0)
    else:
        head_context = weights @ values
        yield stage(
            "head_context",
            "Each head's context vectors",
            formula="Z_h = α_h V_h",
            axes=("head", *rows, "feature"),
            head_context=focus(run, head_context),
        )
        output = head_context.transpose(0, 1).reshape(n, heads * v_dim) @ W["W_out"]
    if bias is not None:
        output = output + bias
    context = run.focus(output)
    yield stage(
        "context",
        "The heads mixed by the output projection" + (" (W_uv folded in)" if absorb else ""),
        formula=f"Z = Σ_h Z_h W̃_h{plus_bias}" if absorb else f"Z = concat(Z_h) W_o{plus_bias}",
        axes=(*rows, "feature"),
        context=context,
    )

    if absorb:
        naive = naive_route(run)["context"]
        largest = float((output - naive).abs().max())
        agree = (
            "the same to the last bit"
            if largest == 0
            else f"equal up to float32 rounding (largest difference {largest:.1e})"
        )
        yield stage(
            "check",
            f"The check: the absorbed route against keys and values rebuilt per head, {agree}",
            formula="Z_absorbed − Z_naive",
            axes=(*rows, "feature"),
            difference=run.focus(output - naive),
            naive=run.focus(naive),
            absorbed=context,
        )
    return context


def naive_route(run: RunContext, *, transpose_uk: bool = True, scale: float | None = None) -> dict:
    """The tensors of latent attention with keys and values rebuilt per head, with changes:
    ``transpose_uk=False`` folds W_uk into the queries without its transpose (absorption's
    classic mistake, which runs without an error when rank = head_dim); ``scale`` replaces
    1/√(head_dim + rope_dim)."""
    heads, head_dim, rank, rope_dim = shapes(run)
    v_dim = value_dim(run, head_dim)
    inputs = run.inputs
    n = inputs.shape[0]
    W = latent_weights(run, heads, rank, rope_dim)
    turn = angles(torch.arange(n), frequencies(rope_dim, BASE)[0])
    latent = inputs @ W["W_dkv"]
    if run.options["latent_norm"]:
        latent = rms_norm(latent)
    key_rope = rotate(inputs @ W["W_kr"], turn, "interleaved")
    source, _ = queries_of(run, W, heads)
    query_nope = split(source @ (W["W_uq"] if "W_uq" in W else W["W_query"]), heads)
    query_rope = rotate(split(source @ W["W_qr"], heads), turn, "interleaved")
    W_uk = W["W_uk"].view(rank, heads, head_dim).permute(1, 0, 2)
    W_uv = W["W_uv"].view(rank, heads, v_dim).permute(1, 0, 2)
    made = {}
    if transpose_uk:
        nope = query_nope @ (latent @ W_uk).transpose(1, 2)
    else:
        made["absorbed_queries"] = query_nope @ W_uk
        nope = made["absorbed_queries"] @ latent.T
    factor = (head_dim + rope_dim) ** -0.5 if scale is None else scale
    scaled = (nope + query_rope @ key_rope.T) * factor
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scaled.masked_fill(mask, float("-inf")), dim=-1)
    output = (weights @ (latent @ W_uv)).transpose(0, 1).reshape(n, heads * v_dim) @ W["W_out"]
    if "b_out" in W:
        output = output + W["b_out"]
    return {**made, "scaled": scaled, "weights": weights, "context": output}


def _head_dim(run: RunContext) -> int:
    return shapes(run)[1]


MISTAKES = (
    Mistake(
        "absorb-transpose",
        "W_uk folded into the queries without its transpose",
        "the score q·k with k = c W_uk is (q W_ukᵀ)·c: multiply each head's query by the "
        "transpose of its W_uk (rank × head_dim), `q @ W_uk.transpose(-2, -1)`.",
        lambda run: naive_route(run, transpose_uk=False),
        ops=("matmul", "__matmul__", "einsum"),
    ),
    Mistake(
        "scaling",
        "scores scaled by √head_dim, leaving out the rotary part's width",
        "each head's query and key are [nope, rope] concatenated: divide by "
        "√(head_dim + rope_dim).",
        lambda run: naive_route(run, scale=_head_dim(run) ** -0.5),
        ops=("div", "__truediv__", "mul", "__mul__"),
    ),
    Mistake(
        "scaling",
        "scores not scaled",
        "divide each head's scores by √(head_dim + rope_dim) before the softmax.",
        lambda run: naive_route(run, scale=1.0),
        ops=("matmul", "__matmul__", "einsum"),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """The weights (W_uk, W_uv: rank x d_out; W_out: d_out²; W_qr: d_in x heads·rope_dim),
    drawn twice with absorb=true, and per head the scores and weights (tokens x tokens),
    the latent route's tables and absorb's folded W_uv W_out (heads x rank x d_out)."""
    n, d, e, o = sizes.tokens, sizes.d_out, sizes.d_in, sizes.options
    heads, rank, rope_dim, absorb = o["heads"], o["rank"], o["rope_dim"], o["absorb"]
    weights = e * (d + rank + (heads + 1) * rope_dim) + 2 * rank * d + d * d + d
    tables = 5 * heads * n * n + 3 * heads * n * (rank + d + rope_dim) + n * (rank + rope_dim)
    folded = heads * rank * d if absorb else 0
    return Cost(
        elements=(2 if absorb else 1) * (weights + tables) + folded,
        table=max(
            heads * n * max(n, rank, rope_dim, d), folded, rank * d, d * d, e * heads * rope_dim
        ),
        smaller=("rank", "heads", "rope_dim", "d_out"),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="mla",
            title="Multi-head latent attention: keys and values from a cached latent",
            description="--d-out is the total width of the heads' no-rope parts, divisible by "
            "--heads N (default 2); -o rank=R is the latent's width, -o rope_dim=D the "
            "decoupled rotary part's; -o absorb=true folds W_uk and W_uv as inference does. "
            "DeepSeek-V3's choices are options, off by default: -o latent_norm=true, "
            "-o q_lora_rank=R, -o v_head_dim=N, -o out_bias=false.",
            run=mla,
            cost=cost,
            options=OPTIONS,
            mistakes=MISTAKES,
            stages=(
                "inputs",
                "projections",
                "latent",
                "queries",
                "absorbed",
                "keys_values",
                "scaled",
                "weights",
                "head_context",
                "context",
                "check",
            ),
            optional_stages=("absorbed", "keys_values", "check"),
        )
    )
