"""training: the hand-written gradients are torch.autograd's, the run is deterministic, and
gradient descent lowers the stated loss."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.variants.problems import HOST, Problem, problems
from tracer.inputs import InputSet, load_inputs
from tracer.tracing.runner import TraceOptions, build_context, start_trace
from tracer.variant import Stage, SubStep


def autograd_loss(x, w_query, w_key, w_value, partner, targets):  # type: ignore[no-untyped-def]
    """The loss the variant states, written with ordinary differentiable torch operations."""
    weights = torch.softmax((x @ w_query) @ (x @ w_key).T / w_key.shape[1] ** 0.5, dim=-1)
    attend = -torch.log(weights[torch.arange(x.shape[0]), partner]).mean()
    carry = torch.nn.functional.mse_loss(weights @ (x @ w_value), targets)
    return attend + carry, weights


def check_against_autograd(
    inputs: str | InputSet, steps: int, lr: float, **options: object
) -> None:
    trace_options = TraceOptions(inputs=inputs, options={"steps": steps, "lr": lr}, **options)  # type: ignore[arg-type]
    run = start_trace("training", trace_options, HOST)
    input_set = inputs if isinstance(inputs, InputSet) else load_inputs(inputs)
    context = build_context(input_set, trace_options)
    x = context.inputs.double()
    tokens = x.shape[0]
    partner = (torch.arange(tokens) + 1) % tokens
    W = [m.double() for m in (context.weights.query, context.weights.key, context.weights.value)]
    targets = x[partner] @ W[2]
    seen = 0
    for step in run:
        if isinstance(step, Stage) and step.name == "objective":
            assert step.tensors["partner"].tolist() == partner.tolist()
            # The variant computes in float32, the oracle in float64: float32's tolerance.
            torch.testing.assert_close(
                step.tensors["targets"].double(), targets, atol=1e-5, rtol=1e-5
            )
        if not isinstance(step, SubStep):
            continue
        params = [m.clone().requires_grad_() for m in W]
        loss, weights = autograd_loss(x, *params, partner, targets)
        grads = torch.autograd.grad(loss, params)
        torch.testing.assert_close(
            step.tensors["loss"].double(), loss.detach(), atol=1e-5, rtol=1e-5
        )
        torch.testing.assert_close(
            step.tensors["weights"].double(), weights.detach(), atol=1e-5, rtol=1e-5
        )
        for name, grad in zip(("grad_W_query", "grad_W_key", "grad_W_value"), grads, strict=True):
            torch.testing.assert_close(step.tensors[name].double(), grad, atol=1e-5, rtol=1e-4)
        # Follow the variant's own descent (in float64) so the next step is checked where it is.
        W = [
            m - lr * step.tensors[name].double()
            for m, name in zip(W, ("grad_W_query", "grad_W_key", "grad_W_value"), strict=True)
        ]
        seen += 1
    assert seen == steps


def test_gradients_are_autograds_on_the_sentence() -> None:
    check_against_autograd("your-journey", steps=5, lr=2.0)
    check_against_autograd("your-journey", steps=3, lr=0.1, init="randn", d_out=4, seed=5)


@settings(max_examples=25, deadline=None)
@given(problems(max_tokens=6), st.integers(1, 3), st.floats(0.01, 1.0))
def test_gradients_are_autograds_on_random_inputs(problem: Problem, steps: int, lr: float) -> None:
    check_against_autograd(problem.input_set, steps=steps, lr=lr)


def test_targets_are_compared_at_float32_precision() -> None:
    """Hypothesis found these inputs: float32 rounding moves one target by 1e-7."""
    found = InputSet(
        name="random",
        tokens=("t0", "t1", "t2", "t3"),
        embeddings=(
            (0.0, 0.0, 0.0, 0.0),
            (1.1974918842315674, -0.9375, 0.0, 1.0),
            (0.0, 0.0, 0.0, 0.0),
            (0.0, 0.0, 0.0, 0.0),
        ),
        weights={
            "query": ((0.0, 0.0, 0.0),) * 4,
            "key": ((0.0, 0.0, 0.0),) * 4,
            "value": (
                (0.0, 0.0, 0.25),
                (0.0, 0.0, -1.2973816394805908),
                (0.0, 0.0, 0.0),
                (0.0, 0.0, -1.5),
            ),
        },
    )
    check_against_autograd(found, steps=1, lr=1.0)


def test_the_loss_goes_down_and_the_weights_move_towards_the_partners() -> None:
    run = start_trace("training", TraceOptions(), HOST).run_to_end()
    loss = run.stage("steps").tensors["loss"]
    assert loss.shape == (51,)  # before each of the 50 default steps, and after the last
    assert bool((loss[1:] < loss[:-1]).all())
    weights = run.stage("weights").tensors
    partner = (torch.arange(6) + 1) % 6
    rows = torch.arange(6)
    assert weights["after"][rows, partner].mean() > weights["before"][rows, partner].mean()
    torch.testing.assert_close(weights["after"].sum(dim=-1), torch.ones(6))


def test_same_seed_same_numbers_and_the_start_is_trainables() -> None:
    def every_tensor(seed: int) -> list[torch.Tensor]:
        run = start_trace("training", TraceOptions(seed=seed, options={"steps": 4}), HOST)
        return [tensor for step in run for tensor in step.tensors.values()]

    first, again = every_tensor(9), every_tensor(9)
    assert len(first) == len(again)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, every_tensor(10), strict=True))

    trainable = start_trace("trainable", TraceOptions(seed=9), HOST).run_to_end()
    start = start_trace("training", TraceOptions(seed=9, options={"steps": 1}), HOST).run_to_end()
    assert torch.equal(
        start.stage("weights").tensors["before"], trainable.stage("weights").tensors["weights"]
    )


def test_one_token_is_its_own_partner() -> None:
    one = InputSet(name="one", tokens=("a",), embeddings=((0.5, -1.0),))
    run = start_trace("training", TraceOptions(inputs=one, options={"steps": 2}), HOST).run_to_end()
    assert run.stage("objective").tensors["partner"].tolist() == [0]
    # One key: the weight is 1, the context is the value itself, so the loss is zero.
    assert run.stage("steps").tensors["loss"].tolist() == [0.0, 0.0, 0.0]


def test_every_tensor_names_its_axes() -> None:
    for query in (None, 4):
        for step in start_trace("training", TraceOptions(query=query, options={"steps": 2}), HOST):
            for name, tensor in step.tensors.items():
                assert len(step.axes[name]) == tensor.dim(), name
