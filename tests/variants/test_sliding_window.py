"""sliding-window against a numpy reference and torch's SDPA with a band mask."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.variants.problems import Problem, close, output, problems, softmax_attention, trace


def band(tokens: int, window: int) -> np.ndarray:
    """visible[i, j]: key j is among the last ``window`` tokens up to and including i."""
    i = np.arange(tokens)[:, None]
    j = np.arange(tokens)[None, :]
    return (j <= i) & (j > i - window)


@settings(max_examples=40, deadline=None)
@given(problems(), st.integers(1, 12))
def test_equals_numpy_and_sdpa_with_a_band_mask(problem: Problem, window: int) -> None:
    x, w = problem.x, problem.w
    tokens = x.shape[0]
    got = output("sliding-window", problem.input_set, options={"window": window})
    visible = band(tokens, window)
    close(got, softmax_attention(x @ w["query"], x @ w["key"], x @ w["value"], visible))

    q, k, v = (torch.tensor(x @ w[name], dtype=torch.float32) for name in ("query", "key", "value"))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(visible))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(problems(), st.data())
def test_a_window_as_long_as_the_text_is_causal_attention(
    problem: Problem, data: st.DataObject
) -> None:
    tokens = len(problem.input_set.tokens)
    window = data.draw(st.integers(tokens, tokens + 5))
    got = output("sliding-window", problem.input_set, options={"window": window})
    torch.testing.assert_close(got, output("masked", problem.input_set), atol=1e-6, rtol=1e-6)


def test_a_window_of_one_sees_only_itself() -> None:
    run = trace("sliding-window", options={"window": 1})
    weights = run.stage("weights").tensors["weights"]
    assert torch.equal(weights, torch.eye(6))
    values = run.stage("projected").tensors["values"]
    assert torch.equal(run.output, values)


def test_every_query_sees_at_most_window_keys_and_the_band_is_inside_the_causal_mask() -> None:
    run = trace("sliding-window", options={"window": 2})
    seen = run.stage("weights").tensors["keys_seen"]
    assert seen.tolist() == [1, 2, 2, 2, 2, 2]
    masks = run.stage("mask").tensors
    assert torch.equal(masks["causal"], torch.tensor(~band(6, 6)))
    assert torch.equal(masks["band"], torch.tensor(~band(6, 2)))
    weights = run.stage("weights").tensors["weights"]
    assert torch.equal(weights > 0, torch.tensor(band(6, 2)))
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(6))


@settings(max_examples=20, deadline=None)
@given(problems(), st.integers(1, 4), st.data())
def test_a_focused_query_is_that_row(problem: Problem, window: int, data: st.DataObject) -> None:
    query = data.draw(st.integers(0, len(problem.input_set.tokens) - 1))
    full = output("sliding-window", problem.input_set, options={"window": window})
    one = output("sliding-window", problem.input_set, query=query, options={"window": window})
    torch.testing.assert_close(one, full[query], atol=1e-6, rtol=1e-6)


def test_every_tensor_names_its_axes() -> None:
    for query in (None, 2):
        for stage in trace("sliding-window", query=query).stages:
            for name, tensor in stage.tensors.items():
                assert len(stage.axes[name]) == tensor.dim(), (stage.name, name)
