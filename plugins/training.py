"""Training the projections: gradient descent on W_query, W_key and W_value, step by step.

The query, key and value matrices of the other variants are random: they are
*trainable*, and a model learns them by back-propagation. This variant trains
them on a small task that can be stated in one sentence:

    every token should attend to the token after it (the last token: to the
    first) and come out carrying that partner's value.

The loss has one term for each half of that sentence. The first is the
cross-entropy of the attention weights against the partner, -log α[i, partner],
averaged over the tokens. The second is the mean squared difference between
the context vectors and the targets y_i = x_partner(i) W_value, the partners'
values under the starting weights (then held fixed):

    L = mean_i(-log α[i, partner(i)]) + mean_i,c((z_i,c - y_i,c)²),   z = α V

The gradients are worked out by hand below, one line per rule of the chain
rule, so you can read how the loss reaches each matrix; a test checks them
against torch.autograd. Each step then moves every matrix a little downhill:
``W <- W - lr · dL/dW``. Nothing is random: the starting weights are those of
``trainable`` for the same ``--seed``, ``--init`` and ``--d-out``.
"""

import torch

from tracer import Cost, Mistake, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError

STEPS = Option("steps", int, 50, "gradient-descent steps", min=1, max=2_048)
LR = Option("lr", float, 2.0, "learning rate: how far each step moves the weights", min=0.0)


def training(run: RunContext):
    inputs, W = run.inputs, run.weights
    steps, lr = run.options["steps"], run.options["lr"]
    if lr <= 0:
        raise UsageError(f"-o lr must be above 0, got {lr:g}")
    if run.dropout > 0:
        raise UsageError("variant 'training' trains without dropout; leave --dropout at 0")
    n = inputs.shape[0]
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=inputs)

    partner = (torch.arange(n) + 1) % n  # the token after each one; the last wraps to the first
    targets = inputs[partner] @ W.value
    yield stage(
        "objective",
        "The task: each token attends to its partner and carries back its value",
        formula="L = mean(-log α[i, partner(i)]) + mean((Z - Y)²),  Y[i] = x_partner(i) W_v",
        axes={"partner": ("query",), "targets": ("query", "feature")},
        partner=partner,
        targets=targets,
    )

    W_query, W_key, W_value = W.query.clone(), W.key.clone(), W.value.clone()
    losses = []
    for step in range(steps):
        loss, grads, weights = loss_and_gradients(inputs, partner, targets, W_query, W_key, W_value)
        losses.append(loss)
        yield substep(
            "steps",
            (step,),
            formula=f"step {step}: W <- W - {lr:g} · dL/dW",
            axes={
                "loss": (),
                "weights": ("query", "key"),
                "grad_W_query": ("feature", "feature"),
                "grad_W_key": ("feature", "feature"),
                "grad_W_value": ("feature", "feature"),
            },
            loss=loss,
            weights=weights,
            grad_W_query=grads[0],
            grad_W_key=grads[1],
            grad_W_value=grads[2],
        )
        W_query = W_query - lr * grads[0]
        W_key = W_key - lr * grads[1]
        W_value = W_value - lr * grads[2]

    final_loss, _, weights = loss_and_gradients(inputs, partner, targets, W_query, W_key, W_value)
    losses.append(final_loss)
    yield stage(
        "steps",
        f"The loss before each of {steps} steps, and after the last",
        formula="L = mean(-log α[i, partner(i)]) + mean((α V - Y)²)",
        axes=("step",),
        loss=torch.stack(losses),
    )

    yield stage(
        "trained",
        "The trained projections",
        formula=f"after {steps} steps of W <- W - {lr:g} · dL/dW",
        axes=("feature", "feature"),
        W_query=W_query,
        W_key=W_key,
        W_value=W_value,
    )

    start = attention_weights(inputs, W.query, W.key)
    yield stage(
        "weights",
        "Attention weights before and after training",
        formula="α = softmax(Q Kᵀ / √d_k, dim=-1)",
        axes=("key",) if run.query is not None else ("query", "key"),
        before=run.focus(start),
        after=run.focus(weights),
    )

    context = run.focus(weights @ (inputs @ W_value))
    yield stage(
        "context",
        "Context vectors with the trained weights",
        formula="Z = α V",
        axes=("feature",) if run.query is not None else ("query", "feature"),
        context=context,
        targets=run.focus(targets),
    )
    return context


def attention_weights(X, W_query, W_key):
    """softmax(Q Kᵀ / √d_k) for the whole sequence."""
    keys = X @ W_key
    return torch.softmax((X @ W_query) @ keys.T / keys.shape[-1] ** 0.5, dim=-1)


def loss_and_gradients(X, partner, Y, W_query, W_key, W_value):
    """The loss, its gradients with respect to the three matrices, and the attention weights."""
    n = X.shape[0]
    Q, K, V = X @ W_query, X @ W_key, X @ W_value
    scale = K.shape[-1] ** -0.5
    A = torch.softmax(Q @ K.T * scale, dim=-1)
    Z = A @ V
    attend = -torch.log(A[torch.arange(n), partner]).mean()
    carry = ((Z - Y) ** 2).mean()
    loss = attend + carry

    # Backwards, from the loss to each matrix; each line is one step of the chain rule.
    dZ = 2 * (Z - Y) / Z.numel()  # the mean of squares
    dA = dZ @ V.T  # Z = A V
    dV = A.T @ dZ
    dS = A * (dA - (dA * A).sum(dim=-1, keepdim=True))  # back through each row's softmax
    # -log softmax has the gradient softmax - one-hot, here averaged over the n rows.
    dS = dS + (A - torch.nn.functional.one_hot(partner, n)) / n
    dQ = dS @ K * scale  # S = Q Kᵀ · scale
    dK = dS.T @ Q * scale
    grads = (X.T @ dQ, X.T @ dK, X.T @ dV)  # Q = X W_q, K = X W_k, V = X W_v
    return loss, grads, A


# Mistakes learners make here, as changes to the training loop (attn check names one when it
# reproduces their numbers). Written with autograd, apart from the hand-worked gradients above,
# so that a changed forward pass gets its own gradients.
def descend(run: RunContext, *, sign=1.0, scale=None, softmax_dim=-1, moving=False, skip=0):
    """The trained matrices, weights and context of ``training`` with one thing changed."""
    inputs, W = run.inputs, run.weights
    n = inputs.shape[0]
    partner = (torch.arange(n) + 1) % n
    matrices = [m.clone() for m in (W.query, W.key, W.value)]

    def forward(W_query, W_key, W_value):
        keys = inputs @ W_key
        factor = keys.shape[-1] ** -0.5 if scale is None else scale
        weights = torch.softmax((inputs @ W_query) @ keys.T * factor, dim=softmax_dim)
        return weights, weights @ (inputs @ W_value)

    made = {}
    for step in range(run.options["steps"] - skip):
        with torch.enable_grad():
            tracked = [m.detach().requires_grad_() for m in matrices]
            weights, context = forward(*tracked)
            targets = inputs[partner] @ (tracked[2] if moving else W.value)
            loss = -torch.log(weights[torch.arange(n), partner]).mean()
            loss = loss + ((context - targets) ** 2).mean()
            grads = torch.autograd.grad(loss, tracked)
        matrices = [m - sign * run.options["lr"] * g for m, g in zip(matrices, grads, strict=True)]
        if step == 0 and sign < 0:  # uphill soon overflows: the first step is where it shows
            made.update(first_W_query=matrices[0], first_W_key=matrices[1])
            made.update(first_W_value=matrices[2])
    weights, context = forward(*matrices)
    return {
        **made,
        "W_query": matrices[0],
        "W_key": matrices[1],
        "W_value": matrices[2],
        "after": weights,
        "context": context,
    }


STEP_OPS = ("sub", "__sub__", "add", "__add__", "__rsub__")

MISTAKES = (
    Mistake(
        "step-sign",
        "stepping uphill: W + lr · dL/dW",
        "gradient descent moves against the gradient: `W = W - lr * grad`.",
        lambda run: descend(run, sign=-1.0),
        ops=STEP_OPS,
    ),
    Mistake(
        "moving-targets",
        "targets recomputed from the W_value being trained",
        "compute the targets once, from the starting W_value, before the loop: with the "
        "moving W_value the loss can be lowered by shrinking the targets themselves.",
        lambda run: descend(run, moving=True),
    ),
    Mistake(
        "loop-range",
        "one step short",
        "take all `steps` steps: `for _ in range(steps)`.",
        lambda run: descend(run, skip=1),
    ),
    Mistake(
        "scaling",
        "scores not scaled",
        "divide the scores by √d_k (`/ keys.shape[-1] ** 0.5`) before the softmax.",
        lambda run: descend(run, scale=1.0),
        ops=("matmul", "__matmul__"),
    ),
    Mistake(
        "scaling",
        "dividing the scores by d_k instead of √d_k",
        "divide the scores by the square root of the key width: `/ keys.shape[-1] ** 0.5`.",
        lambda run: descend(run, scale=1 / run.weights.key.shape[-1]),
        ops=("div", "__truediv__", "mul", "__mul__"),
    ),
    Mistake(
        "softmax-dim",
        "softmax over the wrong dimension",
        "each query's weights must sum to 1 across the keys: `softmax(..., dim=-1)`.",
        lambda run: descend(run, softmax_dim=0),
        ops=("softmax",),
    ),
)


def cost(sizes: Sizes) -> Cost:
    """One sub-step per gradient-descent step, each with the weights and three gradients."""
    n, d, e, steps = sizes.tokens, sizes.d_out, sizes.d_in, sizes.options["steps"]
    return Cost(
        substeps=steps,
        values=steps * (n * n + 3 * e * d + 1),
        elements=8 * n * n + 4 * n * (e + 2 * d) + 12 * e * d + steps,
        table=max(n * n, n * (e + 2 * d), e * d, steps),
        smaller=("steps",),
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="training",
            title="Training the projections by gradient descent",
            description="-o steps=N (default 50), -o lr=X (default 2): each token learns to "
            "attend to the token after it and carry its value.",
            options=(STEPS, LR),
            run=training,
            cost=cost,
            mistakes=MISTAKES,
            stages=("inputs", "objective", "steps", "trained", "weights", "context"),
            loops=("steps",),
        )
    )
