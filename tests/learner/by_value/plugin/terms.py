"""Two third-party variants whose stages declare the sums they compute, written as a plugin
author would: scores plus a distance bias (``AddBias``), and the difference of two softmaxes
(``Difference``). ``attn check`` names a term a learner leaves out from these equations."""

import torch

from tracer import AddBias, Difference, RunContext, Variant, hookimpl, stage

SLOPE = 0.5


def distance_bias(run: RunContext):
    X, W = run.inputs, run.weights
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=X)
    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    yield stage("queries", "Queries", axes=("query", "feature"), queries=Q)
    n = X.shape[0]
    positions = torch.arange(n, dtype=X.dtype)
    scaled = Q @ K.T / K.shape[-1] ** 0.5
    bias = -SLOPE * (positions[:, None] - positions[None, :]).abs()
    biased = scaled + bias
    yield stage(
        "biased",
        "Scaled scores plus a penalty growing with the distance",
        axes=("query", "key"),
        equation=AddBias("scaled", "bias", "biased"),
        biased=biased,
        scaled=scaled,
        bias=bias,
    )
    weights = torch.softmax(biased, dim=-1)
    yield stage("weights", "Attention weights", axes=("query", "key"), weights=weights)
    context = weights @ V
    yield stage("context", "Context vectors", axes=("query", "feature"), context=context)
    return context


def two_softmaxes(run: RunContext):
    X, W = run.inputs, run.weights
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=X)
    Q, K, V = X @ W.query, X @ W.key, X @ W.value
    yield stage("queries", "Queries", axes=("query", "feature"), queries=Q)
    half = Q.shape[-1] // 2
    scale = half**-0.5
    first = torch.softmax(Q[:, :half] @ K[:, :half].T * scale, dim=-1)
    second = torch.softmax(Q[:, half:] @ K[:, half:].T * scale, dim=-1)
    weights = first - 0.5 * second
    yield stage(
        "weights",
        "The first softmax minus half the second",
        axes=("query", "key"),
        equation=Difference("first", "second", "weights", weight=0.5),
        weights=weights,
        first=first,
        second=second,
    )
    context = weights @ V
    yield stage("context", "Context vectors", axes=("query", "feature"), context=context)
    return context


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="distance-bias",
            title="Attention with a distance penalty on the scores",
            run=distance_bias,
            stages=("inputs", "queries", "biased", "weights", "context"),
        )
    )
    register(
        Variant(
            name="two-softmaxes",
            title="The difference of two softmaxes",
            run=two_softmaxes,
            stages=("inputs", "queries", "weights", "context"),
        )
    )
