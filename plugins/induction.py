"""Induction heads: a small trained transformer continues a repeated sequence.

Every other variant runs on made-up embeddings and random weights. This one
runs a model that learnt something: a two-layer, attention-only transformer
(four heads per layer, no MLPs, no layer norm) trained by
``scripts/train_induction.py`` on sequences of random letters that repeat. To
predict the next letter of a repeat, it has to find where the current letter
occurred before and copy the letter that came after it.

Two heads do that together (Olsson et al., "In-context Learning and Induction
Heads", 2022): in layer 0 a *previous-token head* writes into each position
which letter came just before it; in layer 1 an *induction head* looks for the
position whose previous letter is the current letter, that is, the position
just after its earlier occurrence, and copies that letter towards the output.

The model's tokens are the letters A to T. By default it reads ten random
letters twice; ``--inputs`` takes any file whose ``tokens`` are those letters
(``embeddings`` may be left out: the model has its own), at most 24 of them.
``-o layer=L`` and ``-o head=H`` keep the per-head stages to one layer, one head.

The trained tensors ship beside this file, with their sha256 checksum, which is
checked before they are used.

The ``prediction`` loop steps through the model's guess at each position, so a
lesson can stop where the repeat begins and ask what comes next.
"""

import hashlib
import math
from pathlib import Path

import torch

from tracer import Cost, Option, RunContext, Sizes, Variant, hookimpl, stage, substep
from tracer.errors import UsageError
from tracer.inputs import InputSet

WEIGHTS = Path(__file__).with_name("induction_weights.pt")
VOCAB = tuple("ABCDEFGHIJKLMNOPQRST")
"""Token id i is the letter VOCAB[i]."""
LAYERS = 2
SUBSCRIPTS = "₀₁₂"

# Ten letters drawn once at random (random.Random(2022).sample(VOCAB, 10)), then repeated.
REPEATED = InputSet(
    name="repeated-letters",
    description="ten random letters, then the same ten again",
    tokens=("R", "J", "O", "S", "B", "I", "M", "L", "N", "G") * 2,
    embeddings=(),
)

LAYER = Option("layer", int, -1, "show the heads of this layer only (-1: both)", min=-1, max=1)
HEAD = Option("head", int, -1, "show this head only (-1: all four)", min=-1, max=3)


def load_model() -> dict[str, torch.Tensor]:
    """The trained tensors, after checking them against the checksum shipped beside them."""
    try:
        data = WEIGHTS.read_bytes()
        expected = WEIGHTS.with_suffix(".sha256").read_text().split()[0]
    except (OSError, IndexError) as exc:
        raise UsageError(f"the induction model's weights cannot be read: {exc}") from None
    if hashlib.sha256(data).hexdigest() != expected:
        raise UsageError(
            f"{WEIGHTS} does not match its sha256 checksum: the file is damaged; "
            "reinstall attention-tracer or run scripts/train_induction.py"
        )
    return torch.load(WEIGHTS, weights_only=True)


def token_ids(tokens, context: int) -> torch.Tensor:
    unknown = [(i, t) for i, t in enumerate(tokens) if t not in VOCAB]
    if unknown:
        position, token = unknown[0]
        raise UsageError(
            f"token {position} '{token}' is not in the induction model's vocabulary: "
            f"its tokens are the letters {VOCAB[0]} to {VOCAB[-1]}"
        )
    if len(tokens) > context:
        raise UsageError(
            f"the induction model reads at most {context} tokens; the inputs have {len(tokens)}"
        )
    return torch.tensor([VOCAB.index(t) for t in tokens])


def induction(run: RunContext):
    if run.dropout > 0:
        raise UsageError(
            "variant 'induction' runs a trained model as it predicts; leave --dropout at 0"
        )
    if run.padding is not None and any(run.padding):
        raise UsageError("variant 'induction' reads every token; its inputs cannot have padding")
    model = load_model()
    ids = token_ids(run.tokens, model["W_pos"].shape[0])
    n = len(ids)
    yield stage("tokens", "Token ids: A is 0, B is 1, ...", axes=("token",), ids=ids)

    token_embedding = model["W_E"][ids]
    position_embedding = model["W_pos"][:n]
    residual = token_embedding + position_embedding
    yield stage(
        "embed",
        "Embeddings: what each token is plus where it is; the start of the residual stream",
        formula="x₀[i] = W_E[token i] + W_pos[i]",
        axes=("token", "feature"),
        token_embedding=token_embedding,
        position_embedding=position_embedding,
        residual=residual,
    )

    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    for layer in range(LAYERS):
        # Every head has its own (d_model, d_head) projections, stacked along dim 0.
        W_Q, W_K = model[f"{layer}.W_Q"], model[f"{layer}.W_K"]
        W_V, W_O = model[f"{layer}.W_V"], model[f"{layer}.W_O"]
        queries = torch.einsum("td,hde->hte", residual, W_Q)
        keys = torch.einsum("td,hde->hte", residual, W_K)
        values = torch.einsum("td,hde->hte", residual, W_V)
        d_head = keys.shape[-1]
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_head)
        scores = scores.masked_fill(future, float("-inf"))
        yield heads_stage(
            run,
            layer,
            "scores",
            "scaled scores, the future hidden",
            f"ω_h = Q_h K_hᵀ / √{d_head},  Q_h = x W_Q[h],  K_h = x W_K[h];  -inf where key > query",
            ("query", "key"),
            scores=scores,
        )

        weights = torch.softmax(scores, dim=-1)
        yield heads_stage(
            run,
            layer,
            "weights",
            "attention weights",
            "α_h = softmax(ω_h, dim=-1)",
            ("query", "key"),
            weights=weights,
        )

        # What each head writes into the residual stream: its context vectors, projected back.
        head_outputs = torch.einsum("htk,hkd->htd", weights @ values, W_O)
        yield heads_stage(
            run,
            layer,
            "outputs",
            "what each head adds to the residual stream",
            "out_h = (α_h V_h) W_O[h],  V_h = x W_V[h]",
            ("token", "feature"),
            outputs=head_outputs,
        )

        residual = residual + head_outputs.sum(dim=0)
        yield stage(
            f"layer{layer}_residual",
            f"Layer {layer}: the residual stream, with every head's output added",
            formula=f"x{SUBSCRIPTS[layer + 1]} = x{SUBSCRIPTS[layer]} + Σ_h out_h",
            axes=("token", "feature"),
            residual=residual,
        )

    logits = residual @ model["W_U"]
    yield stage(
        "logits",
        "Logits: a score for every letter as the next token",
        formula="logits = x₂ W_U",
        axes=("token", "letter"),
        logits=logits,
    )

    probabilities = torch.softmax(logits, dim=-1)
    best, predicted = probabilities.max(dim=-1)
    actual = ids[1:]
    # The loop a lesson steps through: the model's guess at each position, one token at a time
    # (a lesson can stop where the repeat starts and ask what comes next).
    for i in range(n):
        following = f"; the next token is {VOCAB[int(actual[i])]}" if i < n - 1 else ""
        yield substep(
            "prediction",
            (i,),
            formula=(
                f"after {VOCAB[int(ids[i])]} (token {i}): predicts "
                f"{VOCAB[int(predicted[i])]} with p = {float(best[i]):.3f}{following}"
            ),
            axes={"probabilities": ("letter",)},
            probabilities=probabilities[i],
            predicted=predicted[i],
            probability=best[i],
        )
    yield stage(
        "prediction",
        "The predicted next token (an id: A is 0) against the one that comes next",
        formula="prediction[i] = argmax_j softmax(logits[i])[j]",
        axes=("token",),
        predicted=predicted,
        probability=best,
        actual_next=actual,
        correct=predicted[:-1] == actual,
    )
    return logits


def heads_stage(run, layer, name, what, formula, axes, **tensors):
    """One stage of per-head tensors (head, ...), kept to the focused layer and head."""
    focus_layer, focus_head = run.options["layer"], run.options["head"]
    title = f"Layer {layer}: {what}, per head"
    if focus_layer not in (-1, layer):
        # Out of focus: the layer still runs (the next one reads its output), unshown.
        return stage(
            f"layer{layer}_{name}",
            f"Layer {layer}: {what} (not shown: -o layer={focus_layer})",
            formula=formula,
        )
    query_row = run.query is not None and axes[0] == "query"
    shown = {}
    for key, tensor in tensors.items():
        if query_row:  # --query: that query's row of each head
            tensor = tensor[:, run.query]
        if focus_head != -1:
            tensor = tensor[focus_head]
        shown[key] = tensor
    head_axis = () if focus_head != -1 else ("head",)
    if focus_head != -1:
        title = f"Layer {layer}, head {focus_head}: {what}"
    return stage(f"layer{layer}_{name}", title, formula=formula, axes=(*head_axis, *axes), **shown)


STAGES = (
    "tokens",
    "embed",
    *(
        f"layer{layer}_{name}"
        for layer in range(LAYERS)
        for name in ("scores", "weights", "outputs", "residual")
    ),
    "logits",
    "prediction",
)


def cost(sizes: Sizes) -> Cost:
    """Each layer's heads' tables (tokens x tokens) and one prediction a token."""
    n = sizes.tokens
    return Cost(
        substeps=n,
        values=n * (len(VOCAB) + 2),
        elements=64 * n * n + 1024 * n,
        table=4 * n * n + 1024 * n,
    )


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="induction",
            title="Induction heads: a small trained transformer continues a repeat",
            description="A 2-layer attention-only model trained on repeated letters A-T; "
            "-o layer=L, -o head=H focus one layer, one head.",
            run=induction,
            cost=cost,
            loops=("prediction",),
            stages=STAGES,
            options=(LAYER, HEAD),
            inputs=REPEATED,
            uses_weights=False,
            uses_embeddings=False,
        )
    )
