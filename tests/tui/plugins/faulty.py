"""Variants that go wrong on purpose, for the TUI's error handling tests."""

import torch

from tracer import RunContext, Variant, hookimpl, stage, substep


def broken(run: RunContext):
    yield stage("inputs", "Token embeddings", inputs=run.inputs)
    raise ValueError("this variant fails on purpose [at stage two]")


def fails_in_loop(run: RunContext):
    x = run.inputs
    yield stage("inputs", "Token embeddings", inputs=x)
    for j in range(2):
        yield substep("scores", (0, j), score=torch.dot(x[0], x[j]))
    raise RuntimeError("the loop broke after two sub-steps")


def odd(run: RunContext):
    yield stage("inputs", "Not a tensor", inputs=[[1, 2], [3, 4]])
    return run.inputs


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="broken",
            title="Fails after one stage",
            run=broken,
            stages=("inputs", "scores"),
            uses_weights=False,
        )
    )
    register(
        Variant(
            name="fails-in-loop",
            title="Fails inside its loop",
            run=fails_in_loop,
            stages=("inputs", "scores"),
            loops=("scores",),
            uses_weights=False,
        )
    )
    register(
        Variant(name="odd", title="Yields a list", run=odd, stages=("inputs",), uses_weights=False)
    )
