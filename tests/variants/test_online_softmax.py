"""online-softmax: the tiled recurrence equals full softmax attention (numpy, torch's SDPA,
trainable and masked), ends with the row maximum and sum, and never holds a tokens x tokens table."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.variants.problems import (
    HOST,
    Problem,
    close,
    output,
    problems,
    softmax_attention,
    trace,
)
from tracer.inputs import InputSet
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import SubStep


@settings(max_examples=40, deadline=None)
@given(problems(), st.integers(1, 12), st.booleans())
def test_equals_full_attention(problem: Problem, tile: int, causal: bool) -> None:
    x, w = problem.x, problem.w
    tokens = x.shape[0]
    got = output("online-softmax", problem.input_set, options={"tile": tile, "causal": causal})
    visible = (
        np.tril(np.ones((tokens, tokens), dtype=bool))
        if causal
        else np.ones((tokens, tokens), dtype=bool)
    )
    close(got, softmax_attention(x @ w["query"], x @ w["key"], x @ w["value"], visible))
    q, k, v = (torch.tensor(x @ w[name], dtype=torch.float32) for name in ("query", "key", "value"))
    torch.testing.assert_close(
        got, F.scaled_dot_product_attention(q, k, v, is_causal=causal), atol=1e-5, rtol=1e-5
    )
    same = output("masked" if causal else "trainable", problem.input_set)
    torch.testing.assert_close(got, same, atol=1e-5, rtol=1e-5)


@settings(max_examples=30, deadline=None)
@given(problems(), st.integers(1, 12), st.booleans())
def test_m_and_l_end_as_the_row_maximum_and_the_row_sum(
    problem: Problem, tile: int, causal: bool
) -> None:
    x, w = problem.x, problem.w
    tokens = x.shape[0]
    scores = (x @ w["query"]) @ (x @ w["key"]).T / np.sqrt(w["key"].shape[1])
    if causal:
        scores = np.where(np.tril(np.ones((tokens, tokens), dtype=bool)), scores, -np.inf)
    row_max = scores.max(axis=1)
    row_sum = np.exp(scores - row_max[:, None]).sum(axis=1)
    final = trace(
        "online-softmax", problem.input_set, options={"tile": tile, "causal": causal}
    ).stage("tiles")
    close(final.tensors["m"], row_max)
    close(final.tensors["l"], row_sum)


def test_each_tile_is_attention_over_the_keys_seen_so_far() -> None:
    """After tile t the running output is softmax attention over keys 0 .. end of tile t, and
    the rescale factor is exp(m_old - m_new)."""
    trainable = trace("trainable")
    keys = trainable.stage("keys").tensors["keys"].double().numpy()
    values = trainable.stage("values").tensors["values"].double().numpy()
    queries = trainable.stage("queries").tensors["queries"].double().numpy()
    steps = [
        step
        for step in start_trace("online-softmax", TraceOptions(options={"tile": 4}), HOST)
        if isinstance(step, SubStep)
    ]
    assert [step.position for step in steps] == [(0,), (1,)]
    for step, seen, width in zip(steps, (4, 6), (4, 2), strict=True):
        visible = np.zeros((6, 6), dtype=bool)
        visible[:, :seen] = True
        close(step.tensors["output"], softmax_attention(queries, keys, values, visible))
        close(step.tensors["rescale"], torch.exp(step.tensors["m_old"] - step.tensors["m"]))
        assert step.tensors["scaled"].shape == (6, width)  # one tile of scores, never 6 x 6
    assert torch.equal(steps[0].tensors["rescale"], torch.zeros(6))  # nothing summed before


@pytest.mark.parametrize("tile", [1, 2, 4, 8])
def test_never_holds_a_tokens_by_tokens_table(tile: int) -> None:
    tokens = 9
    inputs = InputSet(
        name="nine",
        tokens=tuple(f"t{i}" for i in range(tokens)),
        embeddings=tuple(tuple(((i * 7 + j) % 5) / 5 for j in range(3)) for i in range(tokens)),
    )
    run = start_trace("online-softmax", TraceOptions(inputs=inputs, options={"tile": tile}), HOST)
    for step in run:
        for name, tensor in step.tensors.items():
            assert list(tensor.shape).count(tokens) <= 1, (name, tuple(tensor.shape))


def test_a_row_with_only_padding_in_its_first_tile_gets_no_nan() -> None:
    inputs = InputSet(
        name="padded",
        tokens=("<pad>", "a", "b"),
        embeddings=((0.1, 0.2), (0.3, -0.4), (0.5, 0.6)),
        padding=(True, False, False),
    )
    got = output("online-softmax", inputs, options={"tile": 1, "causal": True})
    expected = output("masked", inputs)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)
    assert torch.equal(got[0], torch.zeros(2))  # the padding token itself sees nothing


@settings(max_examples=20, deadline=None)
@given(problems(), st.integers(1, 4), st.booleans(), st.data())
def test_a_focused_query_is_that_row(
    problem: Problem, tile: int, causal: bool, data: st.DataObject
) -> None:
    query = data.draw(st.integers(0, len(problem.input_set.tokens) - 1))
    options = {"tile": tile, "causal": causal}
    full = output("online-softmax", problem.input_set, options=options)
    one = output("online-softmax", problem.input_set, query=query, options=options)
    torch.testing.assert_close(one, full[query], atol=1e-6, rtol=1e-6)


def test_every_tensor_names_its_axes() -> None:
    for query in (None, 2):
        for step in start_trace("online-softmax", TraceOptions(query=query), HOST):
            for name, tensor in step.tensors.items():
                assert len(step.axes[name]) == tensor.dim(), name
