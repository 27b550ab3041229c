"""Decoding with a paged KV cache: the cache kept in fixed-size blocks and a block table.

``kv-cache`` grows one contiguous tensor per sequence. A server decoding many
sequences at once cannot: it does not know how long each will grow, so
contiguous caches must be reserved at their longest, and the memory between
them is wasted. Paging, as in the vLLM paper, cuts the cache into blocks of
``-o block=`` tokens taken from one shared pool. A sequence owns a block table,
the list of its blocks in order; token t lives in slot t mod block of the
block listed at entry t // block. A block is taken from the pool only when the
previous one is full, so at most block − 1 slots per sequence are ever unused,
and sequences that start with the same prompt can list the same blocks.

Here one sequence is decoded. To show that its blocks need not be neighbours,
the pool has twice the blocks this sequence needs and another request (not
computed) holds the even-numbered ones: this sequence is given blocks 1, 3, 5...
The attention read through the table is ``kv-cache``'s bit for bit, and so
causal attention up to float rounding, for the same ``--seed``, ``--init`` and
``--d-out``.
"""

import torch
from tracer.builtin_plugins.kv_cache import MISTAKES as CACHE_MISTAKES

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError
from tracer.mistakes import attend

BLOCK = Option("block", int, 2, "tokens per block of the cache", min=1, max=4096)


def paged_kv_cache(run: RunContext):
    inputs, W = run.inputs, run.weights
    if run.dropout > 0:
        raise UsageError(
            "variant 'paged-kv-cache' decodes at inference time, where dropout is off; "
            "leave --dropout at 0"
        )
    size = run.options["block"]
    n = inputs.shape[0]
    d_out = W.query.shape[1]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    needed = -(-n // size)  # blocks for the whole text: ceil(n / size)
    pool = 2 * needed
    free = list(range(1, pool, 2))  # the even-numbered blocks belong to another request
    key_pool = torch.zeros(pool, size, d_out)
    value_pool = torch.zeros(pool, size, d_out)
    table: list[int] = []
    hidden = torch.zeros(n, dtype=torch.bool)  # padding tokens are never attended to
    if run.padding is not None:
        hidden = torch.tensor(run.padding)
    rows, weight_rows = [], []
    last = n if run.query is None else run.query + 1  # a focused query needs only its prefix
    for t in range(last):
        x = inputs[t]
        query, new_key, new_value = x @ W.query, x @ W.key, x @ W.value
        if t % size == 0:  # the last block is full (or there is none yet): take a new one
            table.append(free.pop(0))
        block, slot = table[t // size], t % size
        key_pool[block, slot] = new_key
        value_pool[block, slot] = new_value

        # Read the sequence back through its table: its blocks in order, then its t + 1 tokens.
        keys = key_pool[table].reshape(-1, d_out)[: t + 1]
        values = value_pool[table].reshape(-1, d_out)[: t + 1]
        scaled = keys @ query / d_out**0.5
        scaled = scaled.masked_fill(hidden[: t + 1], float("-inf"))
        weights = torch.softmax(scaled, dim=-1).nan_to_num(0.0)
        context = weights @ values
        yield substep(
            "decode",
            (t,),
            formula=f"token {t} -> block table[{t} // {size}] = {block}, slot {slot}; "
            f"read blocks {table}, keep the first {t + 1} slot{'s' if t else ''}",
            axes={
                "table": ("logical_block",),
                "query": ("feature",),
                "new_key": ("feature",),
                "keys": ("key", "feature"),
                "values": ("key", "feature"),
                "weights": ("key",),
                "context": ("feature",),
            },
            table=torch.tensor(table),
            query=query,
            new_key=new_key,
            keys=keys,
            values=values,
            weights=weights,
            context=context,
        )
        rows.append(context)
        weight_rows.append(torch.cat([weights, torch.zeros(n - t - 1)]))

    yield stage(
        "decode",
        "The keys and values read back through the block table after the last token",
        formula="K = key_pool[table].reshape(-1, d)[: tokens]",
        axes=("key", "feature"),
        keys=keys,
        values=values,
    )

    owner = torch.zeros(pool, dtype=torch.long)
    owner[table] = 1
    owner[torch.arange(0, pool, 2)] = 2
    yield stage(
        "blocks",
        f"The block table (entry -> block of the pool, {len(table)} blocks of {size} slots), "
        f"each token's entry and slot, and the pool's {pool} blocks; owner: 1 this sequence, "
        "2 another request, 0 free",
        formula=f"token t lives in block table[t // {size}], slot t mod {size}",
        axes={
            "table": ("logical_block",),
            "entry": ("token",),
            "slot": ("token",),
            "owner": ("block",),
            "key_pool": ("block", "slot", "feature"),
            "value_pool": ("block", "slot", "feature"),
        },
        table=torch.tensor(table),
        entry=torch.arange(last) // size,
        slot=torch.arange(last) % size,
        owner=owner,
        key_pool=key_pool,
        value_pool=value_pool,
    )

    weights = torch.stack(weight_rows)
    yield stage(
        "weights",
        "The weights of each step, one row per decoded token",
        formula="row t: softmax over the t + 1 keys read through the table",
        axes=("key",) if run.query is not None else ("query", "key"),
        weights=run.focus(weights),
    )

    context = run.focus(torch.stack(rows))
    yield stage(
        "context",
        "Context vectors, one per step: causal attention, as with a contiguous cache",
        formula="z_t = Σ_{j<=t} α[t,j] v_j",
        axes=("feature",) if run.query is not None else ("query", "feature"),
        context=context,
    )
    return context


# Mistakes learners make with a paged cache, as the attention they amount to.
def _slot_late(run: RunContext) -> dict:
    """Token t written one slot too late (slot t + 1) and tokens 0 .. t read back: each query
    sees an empty (zero) slot and every key but its own."""
    inputs, W = run.inputs, run.weights
    queries, keys, values = inputs @ W.query, inputs @ W.key, inputs @ W.value
    d = keys.shape[-1]
    empty = torch.zeros(1, d)
    rows, weight_rows = [], []
    for t in range(inputs.shape[0]):
        cached_keys = torch.cat([empty, keys[:t]])
        cached_values = torch.cat([empty, values[:t]])
        weights = torch.softmax(cached_keys @ queries[t] / d**0.5, dim=-1)
        rows.append(weights @ cached_values)
        weight_rows.append(torch.cat([weights, torch.zeros(inputs.shape[0] - t - 1)]))
    return {"weights": torch.stack(weight_rows), "context": torch.stack(rows)}


def _full_blocks_only(run: RunContext) -> dict:
    """Only the full blocks read: query t sees keys 0 .. size·((t + 1) // size) − 1."""
    n, size = run.inputs.shape[0], run.options["block"]
    t, j = torch.arange(n).unsqueeze(1), torch.arange(n).unsqueeze(0)
    return attend(run, j >= size * ((t + 1) // size))


MISTAKES = (
    Mistake(
        "block-table-off-by-one",
        "each token written one slot too late (its position counted from 1)",
        "token t goes to block table[t // block], slot t % block, with t counted from 0; "
        "then slots 0 .. t hold exactly tokens 0 .. t.",
        _slot_late,
        ops=("__setitem__", "index_put_", "copy_"),
    ),
    Mistake(
        "block-partial-dropped",
        "only the full blocks read back: the block being filled is left out",
        "read ceil((t + 1) / block) blocks from the table, `(t + block) // block`, then keep "
        "the first t + 1 slots.",
        _full_blocks_only,
        ops=("__getitem__", "reshape", "view"),
    ),
    *CACHE_MISTAKES,
)


def cost(sizes: Sizes) -> Cost:
    """One sub-step per decoded token, each holding what it read back through the block
    table (t + 1 keys and values) and the table itself (one entry per block)."""
    n, d, block = sizes.tokens, sizes.d_out, sizes.options["block"]
    steps = n if sizes.query is None else sizes.query + 1
    cached = steps * (steps + 1) // 2
    blocks = -(-steps // block)  # the table grows by one entry a block: 1 + 2 + ... + blocks
    entries = min(block, steps) * blocks * (blocks + 1) // 2
    pool = 2 * -(-n // block) * block * d
    return Cost(
        substeps=steps,
        values=cached * (2 * d + 1) + entries + steps * 4 * d,
        elements=n * n + 2 * pool + 4 * n * (sizes.d_in + 3 * d) + 4 * sizes.d_in * d,
        table=max(n * n, pool, n * (sizes.d_in + 3 * d), sizes.d_in * d),
        larger=("block",),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="paged-kv-cache",
            title="Paged KV cache: decoding with the cache in fixed-size blocks",
            description="Equals kv-cache; -o block=N tokens per block (default 2). The blocks "
            "stage shows the block table and the pool.",
            run=paged_kv_cache,
            cost=cost,
            options=(BLOCK,),
            mistakes=MISTAKES,
            stages=("inputs", "decode", "blocks", "weights", "context"),
            loops=("decode",),
        )
    )
