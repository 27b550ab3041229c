"""backward and flash-backward: every gradient equals torch.autograd's and an independent
numpy computation, causal or not; the tiled backward equals the naive one at every tile size,
skips the tiles above the diagonal, and never holds a tokens x tokens table."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.variants.problems import HOST, Problem, close, problems, trace
from tracer.inputs import InputSet
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import SubStep

GRADIENTS = ("dQ", "dK", "dV", "dW_q", "dW_k", "dW_v", "dX")


def tensors(run: Trace) -> dict[str, torch.Tensor]:
    """Every tensor of the finished trace by name (the last stage that shows it wins)."""
    return {name: t for s in run.stages for name, t in s.tensors.items()}


def autograd(problem: Problem, dO: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    """The gradients of sum(O ∘ dO) by torch.autograd, in float64."""
    x = torch.tensor(problem.x, requires_grad=True)
    w = {n: torch.tensor(m, requires_grad=True) for n, m in problem.w.items()}
    q, k, v = x @ w["query"], x @ w["key"], x @ w["value"]
    for t in (q, k, v):
        t.retain_grad()
    scores = q @ k.T / k.shape[-1] ** 0.5
    if causal:
        n = x.shape[0]
        scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)
    out = torch.softmax(scores, dim=-1) @ v
    (out * torch.tensor(dO)).sum().backward()
    found = {"dQ": q.grad, "dK": k.grad, "dV": v.grad, "dX": x.grad}
    found.update(dW_q=w["query"].grad, dW_k=w["key"].grad, dW_v=w["value"].grad)
    return {name: g.numpy() for name, g in found.items()}  # type: ignore[union-attr]


def by_numpy(problem: Problem, dO: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    """The same gradients written out in numpy, from the chain rule."""
    x, w = problem.x, problem.w
    q, k, v = x @ w["query"], x @ w["key"], x @ w["value"]
    d_k = k.shape[1]
    scores = q @ k.T / np.sqrt(d_k)
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    dv = p.T @ dO
    dp = dO @ v.T
    ds = np.empty_like(p)
    for i in range(p.shape[0]):  # each row's Jacobian, diag(p) - p pᵀ, times dp's row
        jacobian = np.diag(p[i]) - np.outer(p[i], p[i])
        ds[i] = jacobian @ dp[i]
    dq, dk = ds @ k / np.sqrt(d_k), ds.T @ q / np.sqrt(d_k)
    dx = dq @ w["query"].T + dk @ w["key"].T + dv @ w["value"].T
    return {
        "dQ": dq,
        "dK": dk,
        "dV": dv,
        "dW_q": x.T @ dq,
        "dW_k": x.T @ dk,
        "dW_v": x.T @ dv,
        "dX": dx,
        "dP": dp,
        "dS": ds,
    }


@settings(max_examples=8, deadline=None)
@given(problems(max_tokens=6), st.booleans(), st.sampled_from(["ones", "randn"]))
def test_backward_equals_autograd_and_numpy(problem: Problem, causal: bool, upstream: str) -> None:
    run = trace(
        "backward", problem.input_set, options={"causal": causal, "upstream": upstream}, seed=7
    )
    found = tensors(run)
    dO = found["dO"].double().numpy()
    if upstream == "ones":
        assert np.array_equal(dO, np.ones_like(dO))
    reference, written = autograd(problem, dO, causal), by_numpy(problem, dO, causal)
    for name in GRADIENTS:
        close(found[name], reference[name])
        close(found[name], written[name])
    close(found["dP"], written["dP"])
    close(found["dS"], written["dS"])
    assert run.output is found["dX"]


def test_randn_upstream_is_drawn_from_the_seed() -> None:
    first = tensors(trace("backward", options={"upstream": "randn"}, seed=3))["dO"]
    again = tensors(trace("backward", options={"upstream": "randn"}, seed=3))["dO"]
    other = tensors(trace("backward", options={"upstream": "randn"}, seed=4))["dO"]
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_each_row_of_the_softmax_backward_is_its_jacobian_times_dp() -> None:
    steps = [
        s
        for s in start_trace("backward", TraceOptions(options={"causal": True}), HOST)
        if isinstance(s, SubStep)
    ]
    assert [s.position for s in steps] == [(i,) for i in range(6)]
    for step in steps:
        p, dp = step.tensors["p"].double(), step.tensors["dp"].double()
        jacobian = torch.autograd.functional.jacobian(
            lambda s: torch.softmax(s, dim=-1), torch.log(p.clamp_min(1e-300))
        )
        close(step.tensors["jacobian"], jacobian)
        close(step.tensors["ds"], jacobian @ dp)
        close(step.tensors["D"], step.tensors["do"].double() @ step.tensors["o"].double())
        close(step.tensors["D_from_dP"], p @ dp)


def test_the_caption_says_whether_the_two_rowsums_are_bit_identical() -> None:
    stage = trace("backward", options={"upstream": "randn"}).stage("delta")
    identical = torch.equal(stage.tensors["D"], stage.tensors["D_from_dP"])
    assert ("up to rounding" not in stage.title) == identical
    assert "are equal" in stage.title


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("tile", [1, 2, 4, 7])
def test_flash_backward_equals_backward(tile: int, causal: bool) -> None:
    naive = tensors(trace("backward", options={"causal": causal, "upstream": "randn"}))
    flash = trace("flash-backward", options={"tile": tile, "causal": causal, "upstream": "randn"})
    found = tensors(flash)
    for name in GRADIENTS:
        torch.testing.assert_close(found[name], naive[name], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(found["O"], naive["O"], atol=1e-6, rtol=1e-6)
    scores = naive["masked_scores"] if causal else naive["S"]
    torch.testing.assert_close(found["L"], torch.logsumexp(scores, dim=-1))


@settings(max_examples=8, deadline=None)
@given(problems(max_tokens=7), st.integers(1, 4), st.booleans())
def test_flash_backward_equals_autograd(problem: Problem, tile: int, causal: bool) -> None:
    found = tensors(
        trace("flash-backward", problem.input_set, options={"tile": tile, "causal": causal})
    )
    reference = autograd(
        problem, np.ones((problem.x.shape[0], problem.w["value"].shape[1])), causal
    )
    for name in GRADIENTS:
        close(found[name], reference[name])


def test_causal_tiles_above_the_diagonal_are_skipped_and_shown() -> None:
    steps = [
        s
        for s in start_trace(
            "flash-backward", TraceOptions(options={"tile": 2, "causal": True}), HOST
        )
        if isinstance(s, SubStep)
    ]
    # 6 tokens, tiles of 2: 3 key tiles (outer) x 3 query tiles (inner).
    assert [s.position for s in steps] == [(j, i) for j in range(3) for i in range(3)]
    skipped = {s.position for s in steps if "skipped" in (s.formula or "")}
    assert skipped == {(j, i) for j in range(3) for i in range(3) if j > i}
    for step in steps:
        assert ("P_ij" in step.tensors) == (step.position not in skipped)
    final = trace("flash-backward", options={"tile": 2, "causal": True}).stage("skipped")
    expected = torch.tensor([[float(j > i) for i in range(3)] for j in range(3)])
    assert torch.equal(final.tensors["skipped"], expected)
    assert torch.equal(final.tensors["pairs"], torch.full((3, 3), 4.0))


@pytest.mark.parametrize("tile", [1, 2, 4, 8])
def test_flash_backward_never_holds_a_tokens_by_tokens_table(tile: int) -> None:
    tokens = 9
    inputs = InputSet(
        name="nine",
        tokens=tuple(f"t{i}" for i in range(tokens)),
        embeddings=tuple(tuple(((i * 7 + j) % 5) / 5 for j in range(3)) for i in range(tokens)),
    )
    options = TraceOptions(inputs=inputs, options={"tile": tile, "causal": True})
    for step in start_trace("flash-backward", options, HOST):
        for name, tensor in step.tensors.items():
            if step.axes[name] == ("tile", "tile"):
                continue  # one cell per tile (at tile=1, per pair): which were skipped
            assert list(tensor.shape).count(tokens) <= 1, (name, tuple(tensor.shape))


def test_a_row_of_padding_alone_gets_zero_gradients_not_nan() -> None:
    inputs = InputSet(
        name="padded",
        tokens=("<pad>", "a", "b"),
        embeddings=((0.1, 0.2), (0.3, -0.4), (0.5, 0.6)),
        padding=(True, False, False),
    )
    options = {"causal": True, "upstream": "randn"}
    naive = tensors(trace("backward", inputs, options=options))
    flash = tensors(trace("flash-backward", inputs, options={**options, "tile": 1}))
    for name in GRADIENTS:
        assert bool(naive[name].isfinite().all()), name
        torch.testing.assert_close(flash[name], naive[name], atol=1e-6, rtol=1e-6)
    assert torch.equal(naive["dQ"][0], torch.zeros(2))  # the padding query sees nothing


@pytest.mark.parametrize("variant", ["backward", "flash-backward"])
def test_every_tensor_names_its_axes(variant: str) -> None:
    for query in (None, 2):
        options = TraceOptions(query=query, options={"causal": True})
        for step in start_trace(variant, options, HOST):
            for name, tensor in step.tensors.items():
                assert len(step.axes[name]) == tensor.dim(), name


def test_what_lessons_14_and_15_say_about_the_numbers() -> None:
    """With dO = 1 (the lessons' default): dV's columns are equal, dP's rows are equal, every
    row of dS sums to zero, and every entry of dW_v is positive (the embeddings are)."""
    found = tensors(trace("backward"))
    assert torch.equal(found["dV"][:, 0], found["dV"][:, 1])
    assert bool((found["dP"] == found["dP"][0]).all())
    torch.testing.assert_close(found["dS"].sum(dim=-1), torch.zeros(6), atol=1e-6, rtol=0)
    assert bool((found["inputs"] > 0).all()) and bool((found["dW_v"] > 0).all())
    # Lesson 15: with causal tiles of 2 over six tokens, only queries "one" and "step" see "one".
    causal = tensors(trace("backward", options={"causal": True}))
    assert causal["P"][:, 4].nonzero().flatten().tolist() == [4, 5]
