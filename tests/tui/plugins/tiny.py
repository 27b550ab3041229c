"""A small, stable variant for the TUI tests: a loop of dot products, then a softmax.

Kept here (not in plugins/) so edits to the built-in variants never change
the TUI's snapshots, which show this file's lines: change it only with them.
"""

import torch

from tracer import Dot, RunContext, Variant, hookimpl, stage, substep

AXES = {True: ("query", "key"), False: ("key",)}


def tiny(run: RunContext):
    x = run.inputs
    n = x.shape[0]
    yield stage(
        "inputs", "Token embeddings [literal brackets]", axes=("token", "feature"), inputs=x
    )
    scores = torch.zeros(n, n)
    for i in run.query_indices:
        for j in range(n):
            scores[i, j] = torch.dot(x[i], x[j])
            yield substep(
                "scores",
                (i, j),
                formula=f"s[{i},{j}] = x{i} · x{j}",
                axes={"query": ("feature",), "key": ("feature",), "score": ()},
                equation=Dot("query", "key", "score"),
                query=x[i],
                key=x[j],
                score=scores[i, j].clone(),
            )
    yield stage(
        "scores",
        "Scores",
        formula="s = X Xᵀ",
        axes=AXES[run.query is None],
        scores=run.focus(scores),
    )
    weights = torch.softmax(scores, dim=-1)
    yield stage(
        "weights",
        "Weights",
        axes=AXES[run.query is None],
        weights=run.focus(weights),
        scores=run.focus(scores),
    )
    return weights @ x


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="tiny",
            title="Tiny test variant",
            run=tiny,
            stages=("inputs", "scores", "weights"),
            loops=("scores",),
            uses_weights=False,
        )
    )
