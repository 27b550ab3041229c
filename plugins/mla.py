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

Weights: W_query is the tool's own query projection (``trainable``'s for the
same ``--seed``, ``--init``, ``--d-out``); W_dkv, W_uk, W_uv, W_qr, W_kr and the
output projection are drawn after the tool's three under the same seed (``randn``
for ``--init randn``, ``rand`` otherwise, and for weights from a file). The
attention is causal, as in the decoders that use it.
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
)
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


def latent_weights(run: RunContext, heads: int, rank: int, rope_dim: int) -> dict:
    """W_query, W_dkv, W_uk, W_uv, W_qr, W_kr, W_out, b_out (all applied as ``x @ W``)."""
    d_in, d_out = run.weights.query.shape
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(run.seed)
        draw = torch.randn if run.init == "randn" else torch.rand
        for _ in range(3):  # the tool's W_query, W_key, W_value come first under this seed
            draw(d_in, d_out)
        return {
            "W_query": run.weights.query,
            "W_dkv": draw(d_in, rank),
            "W_uk": draw(rank, d_out),
            "W_uv": draw(rank, d_out),
            "W_qr": draw(d_in, heads * rope_dim),
            "W_kr": draw(d_in, rope_dim),
            "W_out": draw(d_out, d_out),
            "b_out": draw(d_out),
        }


def split(t: torch.Tensor, heads: int) -> torch.Tensor:
    """(tokens, heads·w) -> (heads, tokens, w)."""
    return t.view(t.shape[0], heads, -1).transpose(0, 1)


def focus(run: RunContext, per_head: torch.Tensor) -> torch.Tensor:
    """Row ``query`` of each head when a query is focused."""
    return per_head if run.query is None else per_head[:, run.query]


def mla(run: RunContext):
    heads, head_dim, rank, rope_dim = shapes(run)
    absorb = run.options["absorb"]
    inputs = run.inputs
    n, d_out = inputs.shape[0], heads * head_dim
    rows = ("query",) if run.query is None else ()
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    W = latent_weights(run, heads, rank, rope_dim)
    yield stage(
        "projections",
        f"Query projection, down-projection to a latent of {rank}, up-projections back to "
        f"{heads} head{'s' * (heads != 1)} of {head_dim}, the rotary projections, and the output projection",
        axes={
            "W_query": ("feature", "feature"),
            "W_dkv": ("feature", "latent"),
            "W_uk": ("latent", "feature"),
            "W_uv": ("latent", "feature"),
            "W_qr": ("feature", "feature"),
            "W_kr": ("feature", "feature"),
            "W_out": ("feature", "feature"),
            "b_out": ("feature",),
        },
        **W,
    )

    theta, _, _, _ = frequencies(rope_dim, BASE)
    turn = angles(torch.arange(n), theta)
    latent = inputs @ W["W_dkv"]
    key_rope = rotate(inputs @ W["W_kr"], turn, "interleaved")
    yield stage(
        "latent",
        f"What the cache keeps per token: the latent ({rank} numbers) and the rotated rotary "
        f"key ({rope_dim}), {rank + rope_dim} in all, where multi-head attention keeps "
        f"{2 * d_out} (a key and a value per head)",
        formula="c = X W_dkv,  k_rope = RoPE(X W_kr)",
        axes={"latent": ("key", "latent"), "key_rope": ("key", "feature")},
        latent=latent,
        key_rope=key_rope,
    )

    query_nope = split(inputs @ W["W_query"], heads)
    query_rope = rotate(split(inputs @ W["W_qr"], heads), turn, "interleaved")
    yield stage(
        "queries",
        "Each head's query: a part matched against the latent's keys, a rotated part "
        "matched against the rotary key",
        formula="q_nope = X W_q,  q_rope = RoPE(X W_qr),  per head",
        axes=("head", *rows, "feature"),
        query_nope=focus(run, query_nope),
        query_rope=focus(run, query_rope),
    )

    W_uk, W_uv = W["W_uk"].view(rank, heads, head_dim), W["W_uv"].view(rank, heads, head_dim)
    W_uk, W_uv = W_uk.permute(1, 0, 2), W_uv.permute(1, 0, 2)  # (heads, rank, head_dim)
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
        values = latent @ W_uv
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

    W_out = W["W_out"].view(heads, head_dim, d_out)  # rows h·head_dim .. belong to head h
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
        output = (mixed @ folded).sum(dim=0) + W["b_out"]
    else:
        head_context = weights @ values
        yield stage(
            "head_context",
            "Each head's context vectors",
            formula="Z_h = α_h V_h",
            axes=("head", *rows, "feature"),
            head_context=focus(run, head_context),
        )
        output = head_context.transpose(0, 1).reshape(n, d_out) @ W["W_out"] + W["b_out"]
    context = run.focus(output)
    yield stage(
        "context",
        "The heads mixed by the output projection" + (" (W_uv folded in)" if absorb else ""),
        formula="Z = Σ_h Z_h W̃_h + b_o" if absorb else "Z = concat(Z_h) W_o + b_o",
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
    inputs = run.inputs
    n, d_out = inputs.shape[0], heads * head_dim
    W = latent_weights(run, heads, rank, rope_dim)
    turn = angles(torch.arange(n), frequencies(rope_dim, BASE)[0])
    latent = inputs @ W["W_dkv"]
    key_rope = rotate(inputs @ W["W_kr"], turn, "interleaved")
    query_nope = split(inputs @ W["W_query"], heads)
    query_rope = rotate(split(inputs @ W["W_qr"], heads), turn, "interleaved")
    W_uk = W["W_uk"].view(rank, heads, head_dim).permute(1, 0, 2)
    W_uv = W["W_uv"].view(rank, heads, head_dim).permute(1, 0, 2)
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
    output = (weights @ (latent @ W_uv)).transpose(0, 1).reshape(n, d_out) @ W["W_out"]
    return {**made, "scaled": scaled, "weights": weights, "context": output + W["b_out"]}


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
            "decoupled rotary part's; -o absorb=true folds W_uk and W_uv as inference does.",
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
