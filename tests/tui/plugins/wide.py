"""``tiny`` without its loop: its 200×200 tables for the layout tests, not 40,000 sub-steps."""

import torch

from tracer import RunContext, Variant, hookimpl, stage


def wide(run: RunContext):
    x = run.inputs
    yield stage("inputs", "Token embeddings", axes=("token", "feature"), inputs=x)
    scores = x @ x.T
    yield stage("scores", "Scores", formula="s = X Xᵀ", axes=("query", "key"), scores=scores)
    weights = torch.softmax(scores, dim=-1)
    yield stage("weights", "Weights", axes=("query", "key"), weights=weights, scores=scores)
    return weights @ x


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="wide",
            title="Tiny test variant without a loop",
            run=wide,
            stages=("inputs", "scores", "weights"),
            uses_weights=False,
        )
    )
