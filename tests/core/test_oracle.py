"""Every variant agrees with torch's own scaled_dot_product_attention, on random shapes."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

HOST = PluginHost(use_env=False)

values = st.floats(min_value=-3, max_value=3, allow_nan=False, width=32)


@st.composite
def problems(draw: st.DrawFn) -> tuple[InputSet, torch.Tensor, dict[str, torch.Tensor]]:
    tokens = draw(st.integers(1, 9))
    d_in = draw(st.integers(1, 6))
    d_out = draw(st.integers(1, 5))

    def matrix(rows: int, cols: int) -> tuple[tuple[float, ...], ...]:
        cells = draw(st.lists(values, min_size=rows * cols, max_size=rows * cols))
        return tuple(tuple(cells[r * cols : (r + 1) * cols]) for r in range(rows))

    embeddings = matrix(tokens, d_in)
    weights = {name: matrix(d_in, d_out) for name in ("query", "key", "value")}
    input_set = InputSet(
        name="random",
        tokens=tuple(f"t{i}" for i in range(tokens)),
        embeddings=embeddings,
        weights=weights,
    )
    as_tensors = {name: torch.tensor(m) for name, m in weights.items()}
    return input_set, torch.tensor(embeddings), as_tensors


def output(variant: str, input_set: InputSet, query: int | None = None) -> torch.Tensor:
    trace = start_trace(variant, TraceOptions(inputs=input_set, query=query), HOST).run_to_end()
    assert trace.output is not None
    return trace.output


@settings(max_examples=40, deadline=None)
@given(problems())
def test_trainable_and_masked_equal_sdpa(problem: tuple[InputSet, torch.Tensor, dict]) -> None:
    input_set, x, w = problem
    q, k, v = x @ w["query"], x @ w["key"], x @ w["value"]
    expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(output("trainable", input_set), expected, atol=1e-5, rtol=1e-5)
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(output("masked", input_set), causal, atol=1e-5, rtol=1e-5)


@settings(max_examples=40, deadline=None)
@given(problems())
def test_simplified_variants_equal_unscaled_sdpa(
    problem: tuple[InputSet, torch.Tensor, dict],
) -> None:
    input_set, x, _ = problem
    expected = F.scaled_dot_product_attention(x, x, x, scale=1.0)
    for variant in ("naive-loop", "vectorized"):
        torch.testing.assert_close(output(variant, input_set), expected, atol=1e-5, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(problems(), st.data())
def test_focused_query_is_that_row(
    problem: tuple[InputSet, torch.Tensor, dict], data: st.DataObject
) -> None:
    input_set, _, _ = problem
    query = data.draw(st.integers(0, len(input_set.tokens) - 1))
    for variant in ("naive-loop", "vectorized", "trainable", "masked"):
        full = output(variant, input_set)
        torch.testing.assert_close(
            output(variant, input_set, query), full[query], atol=1e-5, rtol=1e-5
        )


def test_one_token_gives_no_nan() -> None:
    one = InputSet(name="one", tokens=("solo",), embeddings=((0.5, -1.0, 2.0),))
    for variant in ("naive-loop", "vectorized", "trainable", "masked"):
        trace = start_trace(variant, TraceOptions(inputs=one), HOST).run_to_end()
        for stage in trace.stages:
            for name, tensor in stage.tensors.items():
                if tensor.is_floating_point():
                    assert not tensor.isnan().any(), f"{variant} {stage.name}.{name}"


def test_fully_masked_rows_give_zeros_not_nan() -> None:
    # Left padding: the first query can see only key 0, which is padding, so its row is all masked.
    padded = InputSet(
        name="padded",
        tokens=("<pad>", "Your", "journey"),
        embeddings=((0.0, 0.0, 0.0), (0.43, 0.15, 0.89), (0.55, 0.87, 0.66)),
        padding=(True, False, False),
    )
    trace = start_trace("masked", TraceOptions(inputs=padded), HOST).run_to_end()
    weights = trace.stage("weights").tensors["weights"]
    renormalized = trace.stage("renormalized").tensors["renormalized"]
    assert not weights.isnan().any() and not renormalized.isnan().any()
    assert trace.output is not None and not trace.output.isnan().any()
    assert weights[0].tolist() == [0.0, 0.0, 0.0]
    assert weights[:, 0].tolist() == [0.0, 0.0, 0.0]  # nobody attends to padding
    torch.testing.assert_close(weights.sum(dim=-1), torch.tensor([0.0, 1.0, 1.0]))


def test_masked_routes_agree() -> None:
    trace = start_trace("masked", TraceOptions(), HOST).run_to_end()
    renormalized = trace.stage("renormalized").tensors["renormalized"]
    weights = trace.stage("weights").tensors["weights"]
    torch.testing.assert_close(renormalized, weights, atol=1e-6, rtol=0)
    assert torch.equal(trace.stage("weights").tensors["difference"], weights - renormalized)
    assert torch.equal(weights.triu(diagonal=1), torch.zeros(6, 6))


# numpy's RandomState(123).random_sample((6, 6)) >= 0.5: the legacy stream numpy
# promises never to change, on any platform (torch's dropout masks differ between
# machines for one seed). Pinned here so a change of generator cannot go unnoticed.
KEPT_AT_SEED_123 = [
    [1, 0, 0, 1, 1, 0],
    [1, 1, 0, 0, 0, 1],
    [0, 0, 0, 1, 0, 0],
    [1, 1, 1, 1, 1, 1],
    [1, 0, 0, 0, 0, 1],
    [0, 0, 0, 0, 0, 0],
]


def test_dropout_mask_is_the_same_on_every_platform() -> None:
    first = start_trace("masked", TraceOptions(dropout=0.5), HOST).run_to_end()
    again = start_trace("masked", TraceOptions(dropout=0.5), HOST).run_to_end()
    dropped = first.stage("dropout").tensors["weights"]
    assert torch.equal(dropped, again.stage("dropout").tensors["weights"])
    weights = first.stage("weights").tensors["weights"]
    keep = torch.tensor(KEPT_AT_SEED_123, dtype=torch.bool)
    assert torch.equal(
        keep, torch.from_numpy(np.random.RandomState(123).random_sample((6, 6)) >= 0.5)
    )
    torch.testing.assert_close(dropped, torch.where(keep, weights * 2, torch.zeros(())))
    undropped = start_trace("masked", TraceOptions(), HOST).run_to_end()
    assert torch.equal(undropped.stage("dropout").tensors["weights"], weights)


def test_focused_dropout_shows_the_row_of_the_full_mask() -> None:
    full = start_trace("masked", TraceOptions(dropout=0.5), HOST).run_to_end()
    row = start_trace("masked", TraceOptions(dropout=0.5, query=2), HOST).run_to_end()
    torch.testing.assert_close(
        row.stage("dropout").tensors["weights"], full.stage("dropout").tensors["weights"][2]
    )


def test_linear_init_matches_nn_linear_layers_created_in_order() -> None:
    torch.manual_seed(123)
    layers = [torch.nn.Linear(3, 2, bias=False) for _ in range(3)]
    trace = start_trace("trainable", TraceOptions(init="linear"), HOST).run_to_end()
    x = trace.stage("inputs").tensors["inputs"]
    with torch.no_grad():
        q, k, v = (layer(x) for layer in layers)
    torch.testing.assert_close(trace.stage("queries").tensors["queries"], q)
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, k, v))
