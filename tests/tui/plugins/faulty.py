"""Variants that go wrong on purpose, for the TUI's error handling tests."""

import os
import sys
import time

import torch

from tracer import Accumulate, RunContext, Variant, hookimpl, stage, substep


def broken(run: RunContext):
    yield stage("inputs", "Token embeddings", inputs=run.inputs)
    raise ValueError("this variant fails on purpose [at stage two]")


def fails_in_loop(run: RunContext):
    x = run.inputs
    yield stage("inputs", "Token embeddings", inputs=x)
    for j in range(2):
        yield substep("scores", (0, j), score=torch.dot(x[0], x[j]))
    raise RuntimeError("the loop broke after two sub-steps")


def exits(run: RunContext):
    yield stage("inputs", "Token embeddings", inputs=run.inputs)
    sys.exit(0)


def no_equation(run: RunContext):
    """Two vectors and a number, with no equation declared: nothing may be inferred."""
    x = run.inputs
    yield stage("inputs", "Token embeddings", inputs=x)
    total = torch.zeros(x.shape[1])
    for j in range(2):
        weight = torch.tensor(0.5)
        total = total + weight * x[j]
        yield substep("context", (0, j), weight=weight, value=x[j], partial=total.clone())
    yield stage("context", "Context", context=total)
    return total


def accumulates(run: RunContext):
    """The same loop, declaring what each iteration computed."""
    x = run.inputs
    yield stage("inputs", "Token embeddings", inputs=x)
    total = torch.zeros(x.shape[1])
    for j in range(2):
        weight = torch.tensor(0.5)
        before = total.clone()
        total = total + weight * x[j]
        yield substep(
            "context",
            (0, j),
            equation=Accumulate("before", "weight", "value", "after"),
            axes={"before": ("feature",), "value": ("feature",), "after": ("feature",)},
            before=before,
            weight=weight,
            value=x[j],
            after=total.clone(),
        )
    yield stage("context", "Context", context=total)
    return total


def sleeps(run: RunContext):
    """Stops in its second step until the test lets it go (a file appears), at most 20 s."""
    yield stage("inputs", "Token embeddings", inputs=run.inputs)
    release = os.environ.get("ATTN_TEST_RELEASE", "")
    started = time.monotonic()
    while not os.path.exists(release) and time.monotonic() - started < 20:
        time.sleep(0.01)
    yield stage("scores", "Scores", scores=run.inputs @ run.inputs.T)
    return run.inputs


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
        Variant(
            name="exits", title="Calls sys.exit", run=exits, stages=("inputs",), uses_weights=False
        )
    )
    register(
        Variant(
            name="sleeps",
            title="Takes its time",
            run=sleeps,
            stages=("inputs", "scores"),
            uses_weights=False,
        )
    )
    for name, run in (("no-equation", no_equation), ("accumulates", accumulates)):
        register(
            Variant(
                name=name,
                title="A loop of weighted sums",
                run=run,
                stages=("inputs", "context"),
                loops=("context",),
                uses_weights=False,
            )
        )
    register(
        Variant(name="odd", title="Yields a list", run=odd, stages=("inputs",), uses_weights=False)
    )
