"""``attn check`` on random problems: correct code always passes, each mistake is always named."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.learner.test_check import CORPUS
from tracer.inputs import InputSet
from tracer.learner.check import check
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

HOST = PluginHost(use_env=False)
# Each example starts a sandbox process for the learner's file (about a second or two), so a few
# examples per case; CI draws the same ones every run.
values = st.floats(min_value=-2, max_value=2, allow_nan=False, width=32)


@st.composite
def problems(draw: st.DrawFn, min_tokens: int = 1, min_d_out: int = 1) -> tuple[InputSet, int, int]:
    tokens = draw(st.integers(min_tokens, 7))
    d_in = draw(st.integers(1, 5))
    cells = draw(st.lists(values, min_size=tokens * d_in, max_size=tokens * d_in))
    embeddings = tuple(tuple(cells[r * d_in : (r + 1) * d_in]) for r in range(tokens))
    inputs = InputSet(
        name="random", tokens=tuple(f"t{i}" for i in range(tokens)), embeddings=embeddings
    )
    return inputs, draw(st.integers(min_d_out, 4)), draw(st.integers(0, 10_000))


CORRECT = [
    ("correct_naive_loop.py", "naive-loop"),
    ("correct_vectorized.py", "vectorized"),
    ("correct_trainable.py", "trainable"),
    ("correct_masked_inf.py", "masked"),
    ("correct_masked_renormalise.py", "masked"),
]


@pytest.mark.parametrize(("name", "variant"), CORRECT)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems())
def test_correct_code_passes_on_any_inputs(
    name: str, variant: str, problem: tuple[InputSet, int, int]
) -> None:
    inputs, d_out, seed = problem
    trace = start_trace(
        variant, TraceOptions(inputs=inputs, d_out=d_out, seed=seed, init="randn"), HOST
    )
    result = check(CORPUS / name, trace.run_to_end())
    assert result.matches, [d.code for d in result.diagnoses]
    assert result.diagnoses == []


# Mistakes that show whenever there are at least 3 tokens and d_k ≥ 2 (with fewer, some are invisible).
MISTAKES = [
    ("softmax_dim.py", "trainable", "softmax-dim"),
    ("missing_scaling.py", "trainable", "scaling"),
    ("wrong_scaling.py", "trainable", "scaling"),
    ("transpose.py", "trainable", "transpose"),
    ("no_renormalise.py", "masked", "renormalise"),
    ("discarded_masked_fill.py", "masked", "discarded-masked-fill"),
    ("mask_diagonal.py", "masked", "mask-diagonal"),
    ("fill_zero.py", "masked", "fill-zero"),
    ("mutates_inputs_loop.py", "vectorized", "inputs-mutated"),
]


# Found by hypothesis: t1 all zeros and t2's key far from t0's query, so t0's weight on t2
# rounds to 0 and a dropped mask equals a mask shifted by one; the code shows which it was.
INDISTINCT = (
    InputSet(
        name="random",
        tokens=("t0", "t1", "t2"),
        embeddings=((-2.0, 0.0, 2.0), (0.0, 0.0, 0.0), (0.0, 0.0, -1.0)),
    ),
    2,
    0,
)


@pytest.mark.parametrize(("name", "variant", "code"), MISTAKES)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(min_tokens=3, min_d_out=2))
@example(problem=INDISTINCT)
def test_each_mistake_is_named_on_any_inputs(
    name: str, variant: str, code: str, problem: tuple[InputSet, int, int]
) -> None:
    inputs, d_out, seed = problem
    trace = start_trace(
        variant, TraceOptions(inputs=inputs, d_out=d_out, seed=seed, init="randn"), HOST
    )
    result = check(CORPUS / name, trace.run_to_end())
    if result.matches:
        return  # these numbers happen to hide the mistake (say, all-zero embeddings)
    assert [d.code for d in result.diagnoses][:1] == [code]
