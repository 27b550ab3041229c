"""The FlashAttention-2 backward pass: the gradients of attention, one tile at a time.

``backward`` keeps four tokens x tokens tables (S, P, dP, dS); at 8,192 tokens
each is 256 MiB. The tiled backward never holds one. The forward pass (the
online softmax of ``online-softmax``) saves, besides the context O, one
number per query: its logsumexp

    L_i = m_i + log l_i = log Σ_j exp(S[i, j])

which is all the backward needs to rebuild any tile of weights (up to float
rounding): P[i, j] = exp(S[i, j] - L_i). Before the tiles, D_i = rowsum(dO ∘ O) is
computed once per query (it equals rowsum(dP ∘ P) without needing P). Then
the backward walks the tiles of keys (outer loop) and, for each, the tiles of
queries (inner loop):

    S_ij  = Q_i K_jᵀ / √d_k               one tile of scores, recomputed
    P_ij  = exp(S_ij - L_i)               one tile of weights, from the saved L
    dV_j += P_ijᵀ dO_i
    dP_ij = dO_i V_jᵀ
    dS_ij = P_ij ∘ (dP_ij - D_i)
    dQ_i += dS_ij K_j / √d_k
    dK_j += dS_ijᵀ Q_i / √d_k

dK_j and dV_j are finished when their key tile's inner loop ends; dQ is
summed over every key tile. With ``-o causal=true`` a tile whose keys all
come after all its queries has P = 0, so it contributes nothing and is
skipped (the loop shows it). ``-o tile=N`` sets the tile's size, in keys and in
queries. The gradients equal ``backward``'s; the weights are those of
``trainable`` for the same ``--seed``, ``--init`` and ``--d-out``.
"""

import torch
from tracer.builtin_plugins.backward import CAUSAL, UPSTREAM, upstream_gradient
from tracer.builtin_plugins.backward import MISTAKES as NAIVE_MISTAKES

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError

TILE = Option("tile", int, 2, "keys, and queries, per tile", min=1, max=16_384)


def key_positions_hidden(run: RunContext, n: int) -> torch.Tensor:
    """True for padding tokens, which no query ever attends to."""
    return (
        torch.tensor(run.padding) if run.padding is not None else torch.zeros(n, dtype=torch.bool)
    )


def tile_scores(run, Q_i, K_j, q_start, k_start, padding):
    """S_ij = Q_i K_jᵀ / √d_k with hidden pairs at -inf (padding; with causal, later keys)."""
    S = Q_i @ K_j.T / K_j.shape[-1] ** 0.5
    rows = torch.arange(q_start, q_start + Q_i.shape[0]).unsqueeze(1)
    columns = torch.arange(k_start, k_start + K_j.shape[0]).unsqueeze(0)
    hide = padding[k_start : k_start + K_j.shape[0]].expand(len(rows), -1)
    if run.options["causal"]:
        hide = hide | (columns > rows)
    return S.masked_fill(hide, float("-inf"))


def forward_tiles(run, Q, K, V, tile, padding):
    """O and each row's logsumexp L by the online softmax, one tile of keys at a time."""
    n = K.shape[0]
    m = torch.full((Q.shape[0],), float("-inf"))
    l = torch.zeros(Q.shape[0])
    O = torch.zeros(Q.shape[0], V.shape[-1])
    for start in range(0, n, tile):
        S = tile_scores(run, Q, K[start : start + tile], 0, start, padding)
        m_old, m = m, torch.maximum(m, S.max(dim=-1).values)
        shift = torch.where(m == float("-inf"), 0.0, m)  # no visible key yet: shift by 0
        rescale = torch.exp(m_old - shift)
        p = torch.exp(S - shift.unsqueeze(1))
        l = rescale * l + p.sum(dim=-1)
        O = rescale.unsqueeze(1) * O + p @ V[start : start + tile]
    safe = l.clamp_min(torch.finfo(l.dtype).tiny)
    O = torch.where(l.unsqueeze(1) > 0, O / safe.unsqueeze(1), 0.0)
    L = torch.where(l > 0, m + torch.log(safe), float("-inf"))  # -inf: a row that sees nothing
    return O, L


def flash_backward(run: RunContext):
    X, W = run.inputs, run.weights
    tile = run.options["tile"]
    if run.dropout > 0:
        raise UsageError("variant 'flash-backward' has no dropout; leave --dropout at 0")
    n = X.shape[0]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=X)

    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    yield stage(
        "projected",
        "Queries, keys and values",
        formula="Q = X W_q,  K = X W_k,  V = X W_v",
        axes={"Q": ("query", "feature"), "K": ("key", "feature"), "V": ("key", "feature")},
        Q=Q,
        K=K,
        V=V,
    )
    padding = key_positions_hidden(run, n)
    O, L = forward_tiles(run, Q, K, V, tile, padding)
    yield stage(
        "forward",
        f"The forward pass, {tile} keys at a time: the context and each row's logsumexp",
        formula="O = softmax(S) V,   L_i = m_i + log l_i = log Σ_j exp(S[i,j])",
        axes={"O": ("query", "feature"), "L": ("query",)},
        O=O,
        L=L,
    )

    dO = upstream_gradient(run, O.shape)
    yield stage(
        "upstream",
        "The gradient arriving at the context, dL/dO",
        formula="dO = 1 everywhere (L = sum of O)"
        if run.options["upstream"] == "ones"
        else f"dO ~ N(0, 1), drawn from seed {run.seed}",
        axes=("query", "feature"),
        dO=dO,
    )
    D = (dO * O).sum(dim=-1)
    yield stage(
        "delta",
        "D = rowsum(dO ∘ O), one number per query, before any tile",
        formula="D_i = Σ_c dO[i,c] O[i,c]   (= rowsum(dP ∘ P), without P)",
        axes=("query",),
        D=D,
    )

    d_k = K.shape[-1]
    shift = torch.where(torch.isneginf(L), 0.0, L)  # a row that sees nothing: P = exp(-inf) = 0
    dQ = torch.zeros_like(Q)
    dK_tiles, dV_tiles = [], []
    count = -(-n // tile)
    pairs = torch.zeros(count, count)  # (key tile, query tile): how many pairs each one holds
    skipped = torch.zeros(count, count)  # 1 where the tile was skipped
    for kj, k_start in enumerate(range(0, n, tile)):
        k_stop = min(k_start + tile, n)
        K_j, V_j = K[k_start:k_stop], V[k_start:k_stop]
        dK_j, dV_j = torch.zeros_like(K_j), torch.zeros_like(V_j)
        for qi, q_start in enumerate(range(0, n, tile)):
            q_stop = min(q_start + tile, n)
            where = f"keys {k_start}..{k_stop - 1} × queries {q_start}..{q_stop - 1}"
            q_axis, k_axis = f"query:{q_start}", f"key:{k_start}"
            pairs[kj, qi] = (k_stop - k_start) * (q_stop - q_start)
            if run.options["causal"] and k_start > q_stop - 1:
                skipped[kj, qi] = 1  # every key here comes after every query: P_ij = 0
                yield substep(
                    "tiles",
                    (kj, qi),
                    formula=f"tile {where}: every key is later than every query, so P = 0 "
                    "here: skipped",
                    axes={
                        "dQ_i": (q_axis, "feature"),
                        "dK_j": (k_axis, "feature"),
                        "dV_j": (k_axis, "feature"),
                    },
                    dQ_i=dQ[q_start:q_stop],
                    dK_j=dK_j,
                    dV_j=dV_j,
                )
                continue
            Q_i, dO_i = Q[q_start:q_stop], dO[q_start:q_stop]
            S_ij = tile_scores(run, Q_i, K_j, q_start, k_start, padding)
            P_ij = torch.exp(S_ij - shift[q_start:q_stop].unsqueeze(1))  # recomputed, from L
            dV_j = dV_j + P_ij.T @ dO_i
            dP_ij = dO_i @ V_j.T
            dS_ij = P_ij * (dP_ij - D[q_start:q_stop].unsqueeze(1))
            dQ_i = dQ[q_start:q_stop] + dS_ij @ K_j / d_k**0.5
            dQ = dQ.slice_scatter(dQ_i, dim=0, start=q_start, end=q_stop)
            dK_j = dK_j + dS_ij.T @ Q_i / d_k**0.5
            yield substep(
                "tiles",
                (kj, qi),
                formula=f"tile {where}: P = exp(S - L), then dV_j, dQ_i and dK_j grow",
                axes={
                    "L_i": (q_axis,),
                    "D_i": (q_axis,),
                    "S_ij": (q_axis, k_axis),
                    "P_ij": (q_axis, k_axis),
                    "dP_ij": (q_axis, k_axis),
                    "dS_ij": (q_axis, k_axis),
                    "dQ_i": (q_axis, "feature"),
                    "dK_j": (k_axis, "feature"),
                    "dV_j": (k_axis, "feature"),
                },
                L_i=L[q_start:q_stop],
                D_i=D[q_start:q_stop],
                S_ij=S_ij,
                P_ij=P_ij,
                dP_ij=dP_ij,
                dS_ij=dS_ij,
                dQ_i=dQ_i,
                dK_j=dK_j,
                dV_j=dV_j,
            )
        dK_tiles.append(dK_j)
        dV_tiles.append(dV_j)
    dK, dV = torch.cat(dK_tiles), torch.cat(dV_tiles)
    yield stage(
        "tiles",
        "After the last tile: dQ, dK and dV",
        formula="dV_j = Σ_i P_ijᵀ dO_i,  dK_j = Σ_i dS_ijᵀ Q_i / √d_k,  dQ_i = Σ_j dS_ij K_j / √d_k",
        axes={"dQ": ("query", "feature"), "dK": ("key", "feature"), "dV": ("key", "feature")},
        dQ=dQ,
        dK=dK,
        dV=dV,
    )
    yield stage(
        "skipped",
        "The tiles, by key tile (rows) and query tile (columns): 1 where the loop skipped one",
        formula="skipped where every key of the tile comes after every query (causal only)",
        axes=("tile", "tile"),
        pairs=pairs,
        skipped=skipped,
    )
    yield stage(
        "grad_projections",
        "Gradients of the projection matrices",
        formula="dW_q = Xᵀ dQ,  dW_k = Xᵀ dK,  dW_v = Xᵀ dV",
        axes=("feature", "feature"),
        dW_q=X.T @ dQ,
        dW_k=X.T @ dK,
        dW_v=X.T @ dV,
    )
    dX = dQ @ W.query.T + dK @ W.key.T + dV @ W.value.T
    yield stage(
        "grad_inputs",
        "Gradient of the embeddings",
        formula="dX = dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ",
        axes=("token", "feature"),
        dX=dX,
    )
    return dX


# Mistakes particular to the tiles, as changed computations (attn check names one when it
# reproduces a learner's numbers); the naive backward's mistakes apply here too. A learner's
# tile may differ from -o tile, so each is tried at several sizes.
def tiled(run: RunContext, tile: int, recompute: str) -> dict[str, torch.Tensor]:
    """The tiled backward with P recomputed without the saved logsumexp.

    ``recompute``: ``tile-softmax`` (each tile's own softmax) or ``no-logsumexp``
    (exp(S) with nothing subtracted)."""
    X, W = run.inputs, run.weights
    n = X.shape[0]
    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    padding = key_positions_hidden(run, n)
    O, _ = forward_tiles(run, Q, K, V, tile, padding)
    dO = upstream_gradient(run, O.shape)
    D = (dO * O).sum(dim=-1, keepdim=True)
    d_k = K.shape[-1]
    dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
    for k_start in range(0, n, tile):
        K_j, V_j = K[k_start : k_start + tile], V[k_start : k_start + tile]
        for q_start in range(0, n, tile):
            Q_i, dO_i = Q[q_start : q_start + tile], dO[q_start : q_start + tile]
            S = tile_scores(run, Q_i, K_j, q_start, k_start, padding)
            if recompute == "tile-softmax":
                P = torch.softmax(S, dim=-1).nan_to_num(0.0)
            else:
                P = torch.exp(S)
            dS = P * (dO_i @ V_j.T - D[q_start : q_start + tile])
            dV[k_start : k_start + tile] += P.T @ dO_i
            dQ[q_start : q_start + tile] += dS @ K_j / d_k**0.5
            dK[k_start : k_start + tile] += dS.T @ Q_i / d_k**0.5
    dX = dQ @ W.query.T + dK @ W.key.T + dV @ W.value.T
    return {"dQ": dQ, "dK": dK, "dV": dV, "dX": dX, "context": dX}


def _at_tiles(code: str, title: str, advice: str, recompute: str) -> tuple[Mistake, ...]:
    return tuple(
        Mistake(
            code,
            title,
            advice,
            lambda run, size=size: tiled(run, size or run.options["tile"], recompute),
            ops=("softmax", "exp"),
        )
        for size in (0, 1, 2, 3, 4)  # 0: the variant's own tile
    )


MISTAKES = (
    *NAIVE_MISTAKES,
    *_at_tiles(
        "no-logsumexp",
        "each tile's P recomputed as that tile's own softmax, not from the saved logsumexp",
        "a tile sees only some of the row's keys, so its own softmax sums to 1 over the wrong "
        "keys: save L = m + log l in the forward pass and recompute `P = torch.exp(S - L)`.",
        "tile-softmax",
    ),
    *_at_tiles(
        "no-logsumexp",
        "each tile's P recomputed as exp(S), without subtracting the saved logsumexp",
        "exp(S) is not yet a weight: divide by the whole row's sum, which the forward pass "
        "saved as L = m + log l: `P = torch.exp(S - L)`.",
        "no-logsumexp",
    ),
)


def cost(sizes: Sizes) -> Cost:
    """One sub-step per (key tile, query tile): (tokens / tile)², each holding a tile's four
    tables; no tokens x tokens table is ever held."""
    n, d, e, tile = sizes.tokens, sizes.d_out, sizes.d_in, sizes.options["tile"]
    side = min(tile, n)
    count = -(-n // tile)
    return Cost(
        substeps=count * count,
        values=count * count * (4 * side * side + 2 * side + 3 * side * d),
        elements=2 * count * count + n * (4 * e + 12 * d + 4) + 4 * side * side + 4 * e * d,
        table=max(count * count, n * (e + d), side * side, e * d),
        larger=("tile",),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="flash-backward",
            title="The FlashAttention-2 backward: gradients one tile at a time",
            description="-o tile=N keys and queries per tile (default 2), "
            "-o upstream=ones|randn, -o causal=true to hide later keys.",
            options=(TILE, UPSTREAM, CAUSAL),
            run=flash_backward,
            cost=cost,
            mistakes=MISTAKES,
            stages=(
                "inputs",
                "projected",
                "forward",
                "upstream",
                "delta",
                "tiles",
                "skipped",
                "grad_projections",
                "grad_inputs",
            ),
            loops=("tiles",),
        )
    )
