"""kv-cache: decoding one token at a time gives causal attention (masked, torch's SDPA), and the
work it reports is what torch's own FLOP counter sees."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from tests.variants.problems import HOST, Problem, close, output, problems, trace
from tracer.inputs import InputSet, load_inputs
from tracer.tracing.runner import TraceOptions, start_trace
from tracer.variant import SubStep


@settings(max_examples=40, deadline=None)
@given(problems())
def test_equals_causal_sdpa_and_masked(problem: Problem) -> None:
    x, w = problem.x, problem.w
    q, k, v = (torch.tensor(x @ w[name], dtype=torch.float32) for name in ("query", "key", "value"))
    got = output("kv-cache", problem.input_set)
    torch.testing.assert_close(
        got, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5, rtol=1e-5
    )
    close(got, output("masked", problem.input_set))


@settings(max_examples=20, deadline=None)
@given(problems(), st.data())
def test_a_focused_query_is_that_row(problem: Problem, data: st.DataObject) -> None:
    query = data.draw(st.integers(0, len(problem.input_set.tokens) - 1))
    full = output("kv-cache", problem.input_set)
    torch.testing.assert_close(output("kv-cache", problem.input_set, query=query), full[query])


def decode_steps(**options: object) -> list[SubStep]:
    run = start_trace("kv-cache", TraceOptions(**options), HOST)  # type: ignore[arg-type]
    return [step for step in run if isinstance(step, SubStep)]


def test_each_step_appends_one_key_and_one_value_to_the_cache() -> None:
    masked = trace("masked")
    keys = masked.stage("keys").tensors["keys"]
    values = masked.stage("values").tensors["values"]
    weights = masked.stage("weights").tensors["weights"]
    steps = decode_steps()
    assert [step.position for step in steps] == [(t,) for t in range(6)]
    for t, step in enumerate(steps):
        cache = step.tensors
        assert cache["keys"].shape == (t + 1, 2)
        close(cache["keys"], keys[: t + 1])
        close(cache["values"], values[: t + 1])
        close(cache["new_key"], keys[t])
        # The new row of weights is masked's row t, without the keys that do not exist yet.
        close(cache["weights"], weights[t, : t + 1])
        close(cache["context"], masked.output[t])


def test_the_work_counted_is_what_torch_counts() -> None:
    """The cache's multiply-adds are the matrix products the trace really runs (torch's FLOP
    counter, two FLOPs per multiply-add); recomputing is masked run on each prefix."""

    def mv_flops(a_shape, b_shape, *args, out_shape=None, **kwargs):  # type: ignore[no-untyped-def]
        return 2 * a_shape[0] * a_shape[1]  # the counter has no rule for matrix-vector products

    counted = {torch.ops.aten.mv: mv_flops}
    run = start_trace("kv-cache", TraceOptions(d_out=3), HOST)
    with FlopCounterMode(display=False, custom_mapping=counted) as cached:
        run.run_to_end()
    work = run.stage("work").tensors
    assert int(work["cached_total"][-1]) * 2 == cached.get_total_flops()

    sentence = load_inputs("your-journey")
    recomputed = []
    for prefix in range(1, 7):
        part = InputSet(
            name="prefix", tokens=sentence.tokens[:prefix], embeddings=sentence.embeddings[:prefix]
        )
        with FlopCounterMode(display=False, custom_mapping=counted) as flops:
            trace("masked", part, d_out=3)
        recomputed.append(flops.get_total_flops() // 2)
    assert work["recompute"].tolist() == recomputed
    assert work["recompute_total"].tolist() == torch.tensor(recomputed).cumsum(0).tolist()
    assert work["cached"].sum() < work["recompute"].sum()


def test_dropout_is_refused_with_one_line(attn) -> None:  # type: ignore[no-untyped-def]
    status, out, err = attn("trace", "kv-cache", "--dropout", "0.1")
    assert status == 2 and out == ""
    assert err == (
        "attn: variant 'kv-cache' decodes at inference time, where dropout is off; "
        "leave --dropout at 0\n"
    )


def test_every_tensor_names_its_axes() -> None:
    for query in (None, 3):
        run = start_trace("kv-cache", TraceOptions(query=query), HOST)
        for step in run:
            for name, tensor in step.tensors.items():
                assert len(step.axes[name]) == tensor.dim(), (
                    step.stage if isinstance(step, SubStep) else step.name,
                    name,
                )


def test_padding_is_never_attended_to_as_in_masked() -> None:
    inputs = InputSet(
        name="padded",
        tokens=("<pad>", "a", "b", "<pad>", "c"),
        embeddings=((0.1, 0.2), (0.3, -0.4), (0.5, 0.6), (0.0, 0.0), (-0.2, 0.7)),
        padding=(True, False, False, True, False),
    )
    # A window as long as the text hides nothing more than the causal mask.
    for variant, options in (("kv-cache", {}), ("sliding-window", {"window": 5})):
        got = trace(variant, inputs, options=options)
        torch.testing.assert_close(got.output, output("masked", inputs), atol=1e-6, rtol=1e-6)
        assert not got.output.isnan().any()
    weights = trace("kv-cache", inputs).stage("weights").tensors["weights"]
    assert torch.equal(weights[:, 0], torch.zeros(5)) and torch.equal(weights[:, 3], torch.zeros(5))
