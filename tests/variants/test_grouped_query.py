"""grouped-query: exactly multihead when every query head has its own key/value head, and
torch's SDPA with enable_gqa (key/value heads shared by groups of query heads) otherwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.variants.problems import Problem, output, problems, trace
from tracer.inputs import InputSet


@pytest.mark.parametrize("init", ["rand", "randn", "linear"])
@pytest.mark.parametrize(("heads", "d_out"), [(1, 2), (2, 2), (2, 4), (4, 8)])
def test_as_many_kv_heads_as_heads_is_exactly_multihead(init: str, heads: int, d_out: int) -> None:
    options = {"init": init, "d_out": d_out, "seed": 7}
    grouped = trace("grouped-query", options={"heads": heads, "kv_heads": heads}, **options)
    multihead = trace("multihead", options={"heads": heads}, **options)
    assert torch.equal(grouped.output, multihead.output)
    assert torch.equal(
        grouped.stage("weights").tensors["weights"], multihead.stage("weights").tensors["weights"]
    )


@st.composite
def grouped_problems(draw: st.DrawFn) -> tuple[Problem, int, int]:
    kv_heads = draw(st.integers(1, 3))
    group = draw(st.integers(1, 3))
    head_dim = draw(st.integers(1, 2))
    heads = kv_heads * group
    problem = draw(problems(max_tokens=7, d_out=st.just(heads * head_dim)))
    return problem, heads, kv_heads


@settings(max_examples=40, deadline=None)
@given(grouped_problems())
def test_equals_sdpa_with_shared_key_value_heads(case: tuple[Problem, int, int]) -> None:
    problem, heads, kv_heads = case
    x, w = problem.x, problem.w
    tokens, d_out = x.shape[0], w["query"].shape[1]
    head_dim, group = d_out // heads, heads // kv_heads
    # The key/value projection of a group is the mean of its heads' columns (numpy, float64).
    pooled = {
        name: w[name]
        .reshape(-1, kv_heads, group, head_dim)
        .mean(axis=2)
        .reshape(-1, kv_heads * head_dim)
        for name in ("key", "value")
    }
    q = torch.tensor(x @ w["query"], dtype=torch.float32).view(tokens, heads, head_dim)
    k = torch.tensor(x @ pooled["key"], dtype=torch.float32).view(tokens, kv_heads, head_dim)
    v = torch.tensor(x @ pooled["value"], dtype=torch.float32).view(tokens, kv_heads, head_dim)
    per_head = F.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True, enable_gqa=True
    )
    # Weights from a file come with an identity output projection and zero bias.
    expected = per_head.transpose(0, 1).reshape(tokens, d_out)
    got = output("grouped-query", problem.input_set, options={"heads": heads, "kv_heads": kv_heads})
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 1), (4, 2), (6, 3), (6, 2)])
def test_the_groups_table_says_which_cache_each_query_head_reads(heads: int, kv_heads: int) -> None:
    run = trace("grouped-query", d_out=heads, options={"heads": heads, "kv_heads": kv_heads})
    reads = run.stage("groups").tensors["reads"]
    assert reads.shape == (heads, kv_heads)
    assert reads.sum(dim=1).tolist() == [1] * heads  # each query head reads one cache
    assert reads.sum(dim=0).tolist() == [heads // kv_heads] * kv_heads  # shared equally
    # Query heads are grouped in order: 0 .. group-1 read cache 0, and so on.
    assert reads.int().argmax(dim=1).tolist() == sorted(reads.int().argmax(dim=1).tolist())
    split = run.stage("split").tensors
    assert split["keys"].shape[0] == kv_heads and split["queries"].shape[0] == heads


def test_multi_query_heads_share_one_set_of_keys() -> None:
    """kv_heads = 1: one key projection, the mean of multihead's two heads' key columns;
    the query projection is multihead's own."""
    run = trace("grouped-query", d_out=4, options={"heads": 2, "kv_heads": 1})
    projections = run.stage("projections").tensors
    assert projections["W_key"].shape == (3, 2)
    multihead = trace("multihead", d_out=4, options={"heads": 2}).stage("projections").tensors
    pooled = (multihead["W_key"][:, :2] + multihead["W_key"][:, 2:]) / 2
    torch.testing.assert_close(projections["W_key"], pooled)
    assert torch.equal(projections["W_query"], multihead["W_query"])


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([(2, 1), (2, 2), (4, 2)]), st.integers(0, 5))
def test_a_focused_query_is_that_row(heads_kv: tuple[int, int], query: int) -> None:
    heads, kv_heads = heads_kv
    options = {"heads": heads, "kv_heads": kv_heads}
    full = output("grouped-query", d_out=4, options=options)
    one = output("grouped-query", d_out=4, query=query, options=options)
    torch.testing.assert_close(one, full[query], atol=1e-6, rtol=1e-6)


def test_every_tensor_names_its_axes() -> None:
    for query in (None, 1):
        run = trace("grouped-query", d_out=4, query=query, options={"heads": 4, "kv_heads": 2})
        for stage in run.stages:
            for name, tensor in stage.tensors.items():
                assert len(stage.axes[name]) == tensor.dim(), (stage.name, name)


def test_one_token_attends_to_itself() -> None:
    one = InputSet(name="one", tokens=("a",), embeddings=((0.5, -1.0),))
    run = trace("grouped-query", one, d_out=4, options={"heads": 2})
    assert torch.equal(run.stage("weights").tensors["weights"], torch.ones(2, 1, 1))
    assert run.output.shape == (1, 4)
    assert np.isfinite(run.output.numpy()).all()
