"""The backward pass of attention: how a loss's gradient flows back to Q, K, V and the weights.

The Basic Self Attention notebook ends where learning begins: the projection
matrices are trainable, and "we can calculate them via back-propagation
because we have labels for the final output". This variant steps through that
back-propagation for scaled dot-product attention, in the order a learner
derives it by the chain rule, with the forward pass first:

    Q = X W_q,  K = X W_k,  V = X W_v,  S = Q Kᵀ / √d_k,  P = softmax(S),  O = P V

Given the gradient of the loss with respect to the context, dO (``-o
upstream=ones`` is the gradient of the sum of every context vector; ``randn``
draws one from ``--seed``), each line below is one rule of the chain rule:

    dV = Pᵀ dO                     O = P V, read from V's side
    dP = dO Vᵀ                     O = P V, read from P's side
    D  = rowsum(dO ∘ O) = rowsum(dP ∘ P)
    dS = P ∘ (dP - D)              back through each row's softmax
    dQ = dS K / √d_k,   dK = dSᵀ Q / √d_k
    dW_q = Xᵀ dQ,  dW_k = Xᵀ dK,  dW_v = Xᵀ dV
    dX = dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ

The softmax's backward is written out one row at a time: row i's Jacobian is
diag(p) - p pᵀ, and its product with dP's row is p ∘ (dp - p·dp). With ``-o
causal=true`` later keys are hidden before the softmax, as ``masked`` does;
their weights are 0, so their dS is 0 as well. The weights are those of
``trainable`` for the same ``--seed``, ``--init`` and ``--d-out``; the variant's
output is dX, the gradient that reaches the embeddings.
"""

import torch

from tracer import Cost, Dot, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError

UPSTREAM = Option(
    "upstream",
    str,
    "ones",
    "the gradient dO arriving at the context: ones (of the sum of the context) or randn",
    choices=("ones", "randn"),
)
CAUSAL = Option("causal", bool, False, "hide later keys from each query, as masked does")
JACOBIAN_UP_TO = 64
"""Rows of at most this many keys show their whole softmax Jacobian (keys x keys)."""


def upstream_gradient(run: RunContext, shape) -> torch.Tensor:
    """dO: ones, or standard normal numbers drawn from the run's seed."""
    if run.options["upstream"] == "ones":
        return torch.ones(shape)
    return torch.randn(shape, generator=torch.Generator().manual_seed(run.seed))


def hidden_keys(run: RunContext, n: int) -> torch.Tensor:
    """True for the (query, key) pairs the softmax never sees: padding, and with causal the future."""
    hidden = torch.zeros(n, n, dtype=torch.bool)
    if run.padding is not None:
        hidden = hidden | torch.tensor(run.padding)
    if run.options["causal"]:
        hidden = hidden | torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return hidden


def backward(run: RunContext):
    X, W = run.inputs, run.weights
    if run.dropout > 0:
        raise UsageError("variant 'backward' has no dropout; leave --dropout at 0")
    n = X.shape[0]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=X)

    # The forward pass, keeping what the backward pass reads: Q, K, V, P and O.
    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    yield stage("queries", "Queries", formula="Q = X W_q", axes=("query", "feature"), Q=Q)
    yield stage("keys", "Keys", formula="K = X W_k", axes=("key", "feature"), K=K)
    yield stage("values", "Values", formula="V = X W_v", axes=("key", "feature"), V=V)
    d_k = K.shape[-1]
    S = Q @ K.T / d_k**0.5
    yield stage(
        "scaled",
        "Scaled scores",
        formula=f"S = Q Kᵀ / √d_k,  d_k = {d_k}",
        axes=("query", "key"),
        S=S,
    )
    hidden = hidden_keys(run, n)
    if bool(hidden.any()):
        S = S.masked_fill(hidden, float("-inf"))
        yield stage(
            "masked_scores",
            "Hidden keys get -inf, so the softmax gives them weight 0",
            formula="S[i,j] = -inf where j > i" if run.options["causal"] else "S = -inf at padding",
            axes=("query", "key"),
            masked_scores=S,  # the name attn check reads the hidden pairs from
        )
    # A row with nothing left to attend to (all padding) gets zero weights, not NaN.
    P = torch.softmax(S, dim=-1).nan_to_num(0.0)
    yield stage(
        "weights", "Attention weights", formula="P = softmax(S, dim=-1)", axes=("query", "key"), P=P
    )
    O = P @ V  # O is the name the FlashAttention papers give the output
    yield stage("context", "Context vectors", formula="O = P V", axes=("query", "feature"), O=O)

    # The backward pass: the loss's gradient dO arrives at the context and flows back.
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
    dV = P.T @ dO
    yield stage(
        "grad_values",
        "Gradient of the values: each key collects dO weighted by how much each query used it",
        formula="dV = Pᵀ dO",
        axes=("key", "feature"),
        dV=dV,
    )
    dP = dO @ V.T
    yield stage(
        "grad_weights",
        "Gradient of the weights",
        formula="dP = dO Vᵀ",
        axes=("query", "key"),
        dP=dP,
    )

    # D, one number per query, in its two forms: the softmax's backward subtracts it.
    D_from_dP = (dP * P).sum(dim=-1)
    D = (dO * O).sum(dim=-1)
    gap = (D - D_from_dP).abs().max().item() if n else 0.0
    agree = "equal" if gap == 0 else f"equal up to rounding (largest difference {gap:.1e})"
    yield stage(
        "delta",
        f"D for each query: rowsum(dO ∘ O) and rowsum(dP ∘ P) are {agree}",
        formula="D = rowsum(dO ∘ O) = rowsum(dP ∘ P)",
        axes=("query",),
        D=D,
        D_from_dP=D_from_dP,
    )

    # Back through the softmax, one row at a time: row i's Jacobian-vector product.
    rows = []
    for i in run.query_indices:
        p, dp, o, do = P[i], dP[i], O[i], dO[i]
        D_row = (dp * p).sum()  # rowsum(dP ∘ P)
        D_from_O = (do * o).sum()  # rowsum(dO ∘ O): the same number up to rounding
        ds = p * (dp - D_row)
        shown, shown_axes = {}, {}
        if n <= JACOBIAN_UP_TO:  # a longer row's Jacobian is too big to show (or to make)
            jacobian = torch.diag(p) - torch.outer(p, p)  # d softmax(s)_j / d s_k
            shown = {"jacobian": jacobian, "jvp": jacobian @ dp}
            shown_axes = {"jacobian": ("key", "key"), "jvp": ("key",)}
        rows.append(ds)
        yield substep(
            "grad_scores",
            (i,),
            formula=f"row {i}: ds = p ∘ (dp - D_from_dP),  D_from_dP = p · dp,  D = dO[{i}] · O[{i}]"
            + (",  ds = J dp with J = diag(p) - p pᵀ" if shown else ""),
            axes={
                "p": ("key",),
                "dp": ("key",),
                "do": ("feature",),
                "o": ("feature",),
                "D_from_dP": (),
                "D": (),
                "ds": ("key",),
                **shown_axes,
            },
            equations=(Dot("p", "dp", "D_from_dP"), Dot("do", "o", "D")),
            p=p,
            dp=dp,
            do=do,
            o=o,
            D_from_dP=D_row,
            D=D_from_O,
            ds=ds,
            **shown,
        )
    # A focused query walked its own row only; dK and dV need every row all the same.
    dS = torch.stack(rows) if run.query is None else P * (dP - D_from_dP.unsqueeze(1))
    yield stage(
        "grad_scores",
        "Gradient of the scores: each row back through its softmax",
        formula="dS = P ∘ (dP - D)",
        axes=("query", "key"),
        dS=dS,
    )

    dQ = dS @ K / d_k**0.5
    yield stage(
        "grad_queries",
        "Gradient of the queries",
        formula="dQ = dS K / √d_k",
        axes=("query", "feature"),
        dQ=dQ,
    )
    dK = dS.T @ Q / d_k**0.5
    yield stage(
        "grad_keys",
        "Gradient of the keys",
        formula="dK = dSᵀ Q / √d_k",
        axes=("key", "feature"),
        dK=dK,
    )
    yield stage(
        "grad_projections",
        "Gradients of the projection matrices: what training steps along",
        formula="dW_q = Xᵀ dQ,  dW_k = Xᵀ dK,  dW_v = Xᵀ dV",
        axes=("feature", "feature"),
        dW_q=X.T @ dQ,
        dW_k=X.T @ dK,
        dW_v=X.T @ dV,
    )
    dX = dQ @ W.query.T + dK @ W.key.T + dV @ W.value.T
    yield stage(
        "grad_inputs",
        "Gradient of the embeddings: the three paths meet",
        formula="dX = dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ",
        axes=("token", "feature"),
        dX=dX,
    )
    return dX


# Mistakes learners make in the backward pass, as changed computations (attn check names one
# when it reproduces their numbers). ``context`` is what attn check compares with the output
# of the learner's function: here dX, the end of the chain.
def gradients(
    run: RunContext,
    *,
    scale_dQ: bool = True,
    scale_dK: bool = True,
    softmax_backward: str = "right",
    transpose_dV: bool = True,
    transpose_dK: bool = True,
    mask_in_backward: bool = True,
) -> dict[str, torch.Tensor]:
    """The backward pass with one thing changed.

    ``softmax_backward``: ``right``; ``dP`` (dP used where dS belongs); ``no-rowsum``
    (dS = P ∘ dP); ``columns`` (the rowsum taken down the columns instead).
    ``transpose_dV=False``: dV = P dO; ``transpose_dK=False``: dK = dS Q.
    ``mask_in_backward=False``: the backward recomputes P from the scores without the mask.
    """
    X, W = run.inputs, run.weights
    n = X.shape[0]
    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    d_k = K.shape[-1]
    S = Q @ K.T / d_k**0.5
    hidden = hidden_keys(run, n)
    P = torch.softmax(S.masked_fill(hidden, float("-inf")), dim=-1).nan_to_num(0.0)
    O = P @ V
    dO = upstream_gradient(run, O.shape)
    if not mask_in_backward:
        P = torch.softmax(S, dim=-1)
    dV = P.T @ dO if transpose_dV else P @ dO
    dP = dO @ V.T
    if softmax_backward == "dP":
        dS = dP
    elif softmax_backward == "no-rowsum":
        dS = P * dP
    elif softmax_backward == "columns":
        dS = P * (dP - (dP * P).sum(dim=0, keepdim=True))
    else:
        dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dQ = dS @ K / (d_k**0.5 if scale_dQ else 1.0)
    dK = (dS.T @ Q if transpose_dK else dS @ Q) / (d_k**0.5 if scale_dK else 1.0)
    dX = dQ @ W.query.T + dK @ W.key.T + dV @ W.value.T
    return {
        "dV": dV,
        "dP": dP,
        "dS": dS,
        "dQ": dQ,
        "dK": dK,
        "dW_q": X.T @ dQ,
        "dW_k": X.T @ dK,
        "dW_v": X.T @ dV,
        "dX": dX,
        "context": dX,
    }


SCALE_OPS = ("div", "__truediv__", "mul", "__mul__", "matmul", "__matmul__")
TRANSPOSE_OPS = ("matmul", "__matmul__", "mm", "t", "transpose")

MISTAKES = (
    Mistake(
        "backward-scale",
        "1/√d_k left out of dQ",
        "S = Q Kᵀ / √d_k, so the scale comes back on the way down: `dQ = dS @ K / d_k ** 0.5`.",
        lambda run: gradients(run, scale_dQ=False),
        ops=SCALE_OPS,
    ),
    Mistake(
        "backward-scale",
        "1/√d_k left out of dK",
        "S = Q Kᵀ / √d_k, so the scale comes back on the way down: `dK = dS.T @ Q / d_k ** 0.5`.",
        lambda run: gradients(run, scale_dK=False),
        ops=SCALE_OPS,
    ),
    Mistake(
        "backward-scale",
        "1/√d_k left out of both dQ and dK",
        "S = Q Kᵀ / √d_k: divide both dQ and dK by √d_k.",
        lambda run: gradients(run, scale_dQ=False, scale_dK=False),
        ops=SCALE_OPS,
    ),
    Mistake(
        "softmax-skipped",
        "dP used where dS belongs (the softmax's backward skipped)",
        "the scores reach the loss through the softmax: `dS = P * (dP - (dP * P).sum(-1, "
        "keepdim=True))`, then dQ and dK from dS.",
        lambda run: gradients(run, softmax_backward="dP"),
        ops=("matmul", "__matmul__"),
    ),
    Mistake(
        "rowsum-missing",
        "the rowsum term left out of the softmax's backward (dS = P ∘ dP)",
        "each weight depends on every score of its row (they sum to 1): subtract "
        "D = (dP * P).sum(-1, keepdim=True) before multiplying by P.",
        lambda run: gradients(run, softmax_backward="no-rowsum"),
        ops=("mul", "__mul__"),
    ),
    Mistake(
        "rowsum-axis",
        "the rowsum taken over the wrong axis (down the columns)",
        "D is one number per query: sum over the keys, `(dP * P).sum(dim=-1, keepdim=True)`.",
        lambda run: gradients(run, softmax_backward="columns"),
        ops=("sum",),
    ),
    Mistake(
        "transpose-missing",
        "a transpose missing in dV (P dO instead of Pᵀ dO)",
        "O = P V sends key j's value to query i with weight P[i, j]; back the other way: "
        "`dV = P.T @ dO`.",
        lambda run: gradients(run, transpose_dV=False),
        # No ops: with dO = 1, P dO is all ones (dO itself), so the first wrong tensor a
        # learner shows is a later one, and the first matmul would name the wrong line.
    ),
    Mistake(
        "transpose-missing",
        "a transpose missing in dK (dS Q instead of dSᵀ Q)",
        "S[i, j] = q_i · k_j / √d_k, so key j collects column j of dS: `dK = dS.T @ Q / d_k ** 0.5`.",
        lambda run: gradients(run, transpose_dK=False),
        ops=TRANSPOSE_OPS,
    ),
    Mistake(
        "mask-unused-backward",
        "the causal mask not applied to dS (P recomputed without it)",
        "the hidden pairs have weight 0 in the forward pass and must have gradient 0: use the "
        "masked P (or fill the scores with -inf again before recomputing it).",
        lambda run: gradients(run, mask_in_backward=False),
        ops=("softmax", "exp"),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """S, P, dP and dS (and the masked scores), tokens x tokens each; one sub-step per row,
    each holding its row (and, up to 64 keys, the row's whole Jacobian)."""
    n, d, e = sizes.tokens, sizes.d_out, sizes.d_in
    rows = 1 if sizes.query is not None else n
    row = 4 * n + 2 * d + 2 + (n * n + n if n <= JACOBIAN_UP_TO else 0)
    return Cost(
        substeps=rows,
        values=rows * row,
        elements=5 * n * n + 4 * n * (e + 3 * d) + 4 * e * d + 4 * d * d,
        table=max(n * n, n * (e + d), e * d),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="backward",
            title="The backward pass: gradients of attention, by the chain rule",
            description="-o upstream=ones|randn (the gradient dO at the context), "
            "-o causal=true to hide later keys.",
            options=(UPSTREAM, CAUSAL),
            run=backward,
            cost=cost,
            mistakes=MISTAKES,
            stages=(
                "inputs",
                "queries",
                "keys",
                "values",
                "scaled",
                "masked_scores",
                "weights",
                "context",
                "upstream",
                "grad_values",
                "grad_weights",
                "delta",
                "grad_scores",
                "grad_queries",
                "grad_keys",
                "grad_projections",
                "grad_inputs",
            ),
            optional_stages=("masked_scores",),
            loops=("grad_scores",),
        )
    )
