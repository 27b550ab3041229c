"""A third-party variant with logit softcapping (as Gemma 2 does), written as a plugin author
would; it declares a re-check at cap=0.5, where a softcap written the wrong way shows."""

import torch

from tracer import Option, RunContext, Variant, hookimpl, stage

CAP = Option("cap", float, 1.0, "the softcap: scores become cap * tanh(scores / cap)", min=0.01)


def softcapped(run: RunContext):
    X, W = run.inputs, run.weights
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=X)
    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    yield stage("queries", "Queries", axes=("query", "feature"), queries=Q)
    scaled = Q @ K.T / K.shape[-1] ** 0.5
    yield stage("scaled", "Scaled scores", axes=("query", "key"), scaled=scaled)
    cap = run.options["cap"]
    capped = cap * torch.tanh(scaled / cap)
    yield stage("capped", "Softcapped scores", axes=("query", "key"), capped=capped)
    weights = torch.softmax(capped, dim=-1)
    yield stage("weights", "Attention weights", axes=("query", "key"), weights=weights)
    context = weights @ V
    yield stage("context", "Context vectors", axes=("query", "feature"), context=context)
    return context


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="softcap",
            title="Attention with softcapped scores",
            run=softcapped,
            stages=("inputs", "queries", "scaled", "capped", "weights", "context"),
            options=(CAP,),
            rechecks=({"cap": 0.5},),
        )
    )
