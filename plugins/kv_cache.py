"""Decoding with a KV cache: causal attention computed one new token at a time.

A language model writes text one token at a time, and each new token may
attend to itself and everything before it. Recomputing the whole attention
for every new token repeats work: the keys and values of the earlier tokens
have not changed. So a decoder keeps them in a cache. For each new token it

1. projects only the new token into a query, a key and a value,
2. appends the key and the value to the cache,
3. scores the new query against every cached key and takes a softmax,
4. mixes the cached values into the new token's context vector.

The rows produced this way are the causal (``masked``) attention of the whole
text up to float rounding, with the same weights for the same ``--seed``, ``--init`` and
``--d-out``. A last stage counts the multiply-adds the loop did against
recomputing causal attention over the whole prefix at every step.
"""

import torch

from tracer import Cost, Mistake, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError
from tracer.mistakes import attend, causal, common_mistakes


def kv_cache(run: RunContext):
    inputs, W = run.inputs, run.weights
    if run.dropout > 0:
        raise UsageError(
            "variant 'kv-cache' decodes at inference time, where dropout is off; "
            "leave --dropout at 0"
        )
    n, d_in = inputs.shape
    d_out = W.query.shape[1]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    hidden = torch.zeros(n, dtype=torch.bool)  # padding tokens are never attended to
    if run.padding is not None:
        hidden = torch.tensor(run.padding)
    keys = torch.empty(0, d_out)  # the cache starts empty and grows one row per token
    values = torch.empty(0, d_out)
    rows, weight_rows = [], []
    work_cached, work_recompute = [], []
    last = n if run.query is None else run.query + 1  # a focused query needs only its prefix
    for t in range(last):
        x = inputs[t]
        query, new_key, new_value = x @ W.query, x @ W.key, x @ W.value
        keys = torch.cat([keys, new_key.unsqueeze(0)])
        values = torch.cat([values, new_value.unsqueeze(0)])

        scaled = keys @ query / d_out**0.5
        scaled = scaled.masked_fill(hidden[: t + 1], float("-inf"))
        weights = torch.softmax(scaled, dim=-1).nan_to_num(0.0)
        context = weights @ values
        yield substep(
            "decode",
            (t,),
            formula=f"token {t}: cache holds {t + 1} key{'s' * (t != 0)}; "
            f"z{t} = softmax(K q{t} / √d_k) · V",
            axes={
                "query": ("feature",),
                "new_key": ("feature",),
                "new_value": ("feature",),
                "keys": ("key", "feature"),
                "values": ("key", "feature"),
                "scaled": ("key",),
                "weights": ("key",),
                "context": ("feature",),
            },
            query=query,
            new_key=new_key,
            new_value=new_value,
            keys=keys,
            values=values,
            scaled=scaled,
            weights=weights,
            context=context,
        )
        rows.append(context)
        weight_rows.append(torch.cat([weights, torch.zeros(n - t - 1)]))

        # Multiply-adds of this step, from the shapes just used: three projections of one
        # token, one score per cached key, one weighted value per cached key.
        work_cached.append(3 * d_in * d_out + keys.numel() + values.numel())
        # Recomputing causal attention over the prefix instead: project all t + 1 tokens,
        # then the full (t + 1) x (t + 1) scores and their product with the values.
        prefix = t + 1
        work_recompute.append(3 * prefix * d_in * d_out + 2 * prefix * prefix * d_out)

    yield stage(
        "decode",
        "The cache after the last token: every key and value, computed once",
        formula="K = [k0; k1; ...],  V = [v0; v1; ...]",
        axes=("key", "feature"),
        keys=keys,
        values=values,
    )

    weights = torch.stack(weight_rows)
    yield stage(
        "weights",
        "The weights of each step, one row per decoded token",
        formula="row t: softmax over the cache of keys 0 .. t; later keys did not exist yet",
        axes=("key",) if run.query is not None else ("query", "key"),
        weights=run.focus(weights),
    )

    context = run.focus(torch.stack(rows))
    yield stage(
        "context",
        "Context vectors, one per step: causal attention",
        formula="z_t = Σ_{j<=t} α[t,j] v_j",
        axes=("feature",) if run.query is not None else ("query", "feature"),
        context=context,
    )

    cached = torch.tensor(work_cached)
    recompute = torch.tensor(work_recompute)
    yield stage(
        "work",
        f"Multiply-adds to decode {len(work_cached)} tokens: {int(cached.sum())} with the "
        f"cache, {int(recompute.sum())} recomputing everything at every step",
        formula="t tokens so far: cache 3·d_in·d_out + 2·t·d_out, recompute 3·t·d_in·d_out + 2·t²·d_out",
        axes=("token",),
        cached=cached,
        recompute=recompute,
        cached_total=cached.cumsum(0),
        recompute_total=recompute.cumsum(0),
    )
    return context


# Mistakes learners make with a cache, as the attention they amount to (attn check names
# one when it reproduces their numbers).
def _counted(run: RunContext, twice) -> dict:
    """Causal attention where the keys in ``twice`` (True) are in the cache two times."""
    bonus = twice.to(torch.float32) * torch.log(torch.tensor(2.0))
    return attend(run, causal(run), bonus=bonus)


PREFILLED = {
    0: "the whole text",
    1: "the first token",
    2: "the first 2 tokens",
    3: "the first 3 tokens",
}


def _prefilled(run: RunContext, size: int) -> dict:
    """Keys 0 .. size-1 put in the cache up front, then every token appended as it comes:
    key j is in query t's cache [j < size] + [j <= t] times (size 0: the whole text)."""
    n = run.inputs.shape[0]
    size = size or n
    t, j = torch.arange(n).unsqueeze(1), torch.arange(n).unsqueeze(0)
    count = (j < size).to(torch.float32) + (j <= t).to(torch.float32)
    return attend(run, count == 0, bonus=count.clamp_min(1).log())


MISTAKES = (
    *common_mistakes(causal),
    Mistake(
        "cache-not-updated",
        "a cache that is never appended to",
        "append each new key and value to the cache (`keys = torch.cat([keys, k])`) and keep "
        "the result, so later tokens can attend to it.",
        lambda run: attend(run, ~torch.eye(run.inputs.shape[0], dtype=torch.bool)),
        ops=("cat", "stack", "vstack"),
    ),
    Mistake(
        "cache-twice",
        "each new key and value appended twice",
        "append the new key and value once per token.",
        lambda run: _counted(run, torch.eye(run.inputs.shape[0], dtype=torch.bool)),
        ops=("cat", "stack", "vstack"),
    ),
    Mistake(
        "cache-prefilled",
        "a cache filled with the whole text before decoding",
        "start with an empty cache: token t may only see keys 0 .. t, so add each one as it "
        "is decoded.",
        lambda run: attend(run, None),
        ops=("matmul", "__matmul__"),
    ),
    *(
        Mistake(
            "cache-prefilled",
            f"a cache prefilled with {PREFILLED[size]} and then appended to from the first "
            "token again",
            "start with an empty cache, or start decoding after the prefilled tokens: each key "
            "and value must be in the cache once.",
            lambda run, size=size: _prefilled(run, size),
            ops=("matmul", "__matmul__"),
        )
        for size in (1, 2, 3, 0)  # 0: the whole text
    ),
)


def cost(sizes: Sizes) -> Cost:
    """One sub-step per decoded token, each holding the cache so far (t + 1 keys and values)."""
    n, d = sizes.tokens, sizes.d_out
    steps = n if sizes.query is None else sizes.query + 1
    cached = steps * (steps + 1) // 2  # keys the sub-steps hold, all together
    return Cost(
        substeps=steps,
        values=cached * (2 * d + 3) + steps * 4 * d,
        elements=3 * n * n + 4 * n * (sizes.d_in + 3 * d) + 4 * sizes.d_in * d,
        table=max(n * n, n * (sizes.d_in + 3 * d), sizes.d_in * d),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="kv-cache",
            title="KV-cache decoding: causal attention one token at a time",
            description=(
                "Equals masked up to float rounding; the work stage counts multiply-adds saved "
                "by the cache."
            ),
            run=kv_cache,
            cost=cost,
            mistakes=MISTAKES,
            stages=("inputs", "decode", "weights", "context", "work"),
            loops=("decode",),
        )
    )
