"""``attn check`` accepts what learners return and how they build things.

Several named gradients, or a dataclass of them; configs under the book's, Hugging Face's and
Llama's field names, as the learner's own classes; ``@torch.compile``d functions; arithmetic
in float16. The learner files are in ``accepted/``, written for these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tracer.learner.check import MATCH, check, precision_note
from tracer.learner.compare import close, judged_at, max_difference
from tracer.learner.relations import Known, explain
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "accepted"


def reference(host: PluginHost, variant: str, **options: object) -> Trace:
    return start_trace(variant, TraceOptions(**options), host).run_to_end()  # type: ignore[arg-type]


def test_a_dict_of_named_gradients_is_read_by_the_reference_output_name(
    host: PluginHost,
) -> None:
    result = check(FILES / "grads_dict.py", reference(host, "backward"))
    assert result.matches and result.problem is None and result.diagnoses == []
    assert result.note == "it returned a dict, and its ['dX'] was compared"
    # dX is the gradient torch's own autograd gives the embeddings (an independent oracle).
    trace = reference(host, "backward")
    weights = trace.context.weights
    assert weights is not None
    inputs = trace.context.inputs.clone().requires_grad_(True)
    q, k, v = inputs @ weights.query, inputs @ weights.key, inputs @ weights.value
    out = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v
    out.sum().backward()
    assert result.output is not None and inputs.grad is not None
    assert torch.allclose(result.output, inputs.grad, atol=1e-5)


def test_a_dataclass_of_unnamed_gradients_is_matched_by_value(host: PluginHost) -> None:
    result = check(FILES / "grads_dataclass.py", reference(host, "backward"))
    assert result.matches, result.problem
    assert result.note is not None and "its field x was compared" in result.note


def test_a_wrong_gradient_beside_a_right_output_is_named(host: PluginHost) -> None:
    result = check(FILES / "grads_dict_wrong_dq.py", reference(host, "backward"))
    assert not result.matches
    assert result.problem is not None
    assert result.problem.startswith(
        "the dQ your function returns differs from the 'grad_queries' stage"
    )
    assert result.diagnoses == []  # the output is right: nothing to explain in it


def test_a_dx_without_its_value_path_blames_no_correct_line(host: PluginHost) -> None:
    result = check(FILES / "grads_no_value_path.py", reference(host, "backward"))
    assert not result.matches and result.problem is None
    codes = {d.code for d in result.diagnoses}
    # dQ and dS were computed right (their stages matched): no mistake in them is named.
    assert not codes & {"backward-scale", "rowsum-missing"}
    matched = {r.stage.name for r in result.stages if r.status == MATCH}
    assert {"grad_scores", "grad_queries", "grad_keys"} <= matched


@pytest.mark.parametrize(
    ("name", "variant", "options", "built"),
    [
        (
            "book_dataclass_config.py",
            "masked",
            {},
            "AttentionConfig(d_in=3, d_out=2, context_length=6, dropout=0.0, qkv_bias=False)",
        ),
        (
            "hf_object_config.py",
            "multihead",
            {"d_out": 3, "options": {"heads": 3}},
            "AttnConfig(hidden_size=3, num_attention_heads=3, num_key_value_heads=3, "
            "max_position_embeddings=6, head_dim=1, attention_dropout=0.0)",
        ),
        (
            "llama_args_config.py",
            "grouped-query",
            {"d_out": 3, "options": {"heads": 3, "kv_heads": 1}},
            "ModelArgs(dim=3, n_heads=3, n_kv_heads=1, max_seq_len=6)",
        ),
    ],
)
def test_a_config_of_the_learners_own_class_is_built_with_its_field_names(
    host: PluginHost, name: str, variant: str, options: dict[str, object], built: str
) -> None:
    result = check(FILES / name, reference(host, variant, **options))
    assert result.matches, (result.problem, result.diagnoses)
    assert built in result.called


def test_a_one_width_config_still_asks_for_one_width(host: PluginHost) -> None:
    from tracer.errors import UsageError

    with pytest.raises(UsageError, match=r"run with --d-out 3$") as raised:
        check(
            FILES / "llama_args_config.py",
            reference(host, "grouped-query", d_out=4, options={"heads": 2, "kv_heads": 1}),
        )
    location = raised.value.location
    assert location is not None and location.line == 12  # the ModelArgs dataclass


def test_a_compiled_function_runs_eagerly_and_every_stage_is_compared(
    host: PluginHost,
) -> None:
    result = check(FILES / "compiled_function.py", reference(host, "trainable"))
    assert result.matches
    assert result.note is not None and "torch.compile ran your code eagerly" in result.note
    assert all(r.status == MATCH for r in result.stages if r.stage.name != "inputs")


def test_the_learners_code_has_a_temporary_folder(host: PluginHost, tmp_path: Path) -> None:
    path = tmp_path / "scratch.py"
    path.write_text(
        "import tempfile\nimport torch\n\n\ndef attention(inputs):\n"
        "    with tempfile.NamedTemporaryFile(suffix='.pt') as handle:\n"
        "        torch.save(inputs @ inputs.T, handle.name)\n"
        "        scores = torch.load(handle.name)\n"
        "    return torch.softmax(scores, dim=-1) @ inputs\n"
    )
    assert check(path, reference(host, "vectorized")).matches


def test_float16_arithmetic_is_judged_at_float16s_tolerance(host: PluginHost) -> None:
    trace = reference(host, "trainable")
    result = check(FILES / "half_precision.py", trace)
    assert result.matches and result.precision == torch.float16
    assert result.output is not None
    gap = max_difference(result.output, trace.output)  # type: ignore[arg-type]
    assert 1e-5 < gap < 1e-3  # beyond float32's tolerance, within float16's rounding
    note = precision_note(result)
    assert note is not None
    assert note.startswith("your float16 arithmetic differs by at most ")
    assert "within what float16 can hold" in note


def test_a_small_gap_in_float32_says_precision(host: PluginHost, tmp_path: Path) -> None:
    path = tmp_path / "rounded.py"
    # The weights rounded to float16 and back: float32 tensors with float16's rounding error.
    path.write_text(
        "import torch\n\n\ndef attention(inputs, W_query, W_key, W_value):\n"
        "    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value\n"
        "    w = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)\n"
        "    return (w @ v).tolist()\n"
    )
    path.write_text(
        path.read_text().replace(
            "    return (w @ v).tolist()\n",
            "    return torch.tensor((w @ v).numpy().astype('float16').astype('float32'))\n",
        )
    )
    result = check(path, reference(host, "trainable"))
    assert not result.matches and result.precision is None
    note = precision_note(result)
    assert note is not None and "lower precision" in note


def test_the_tolerance_is_back_to_float32s_after_a_float16_check() -> None:
    a = torch.tensor([1.0])
    with judged_at(torch.float16):
        assert close(a + 1e-3, a)
    assert not close(a + 1e-3, a)


def test_the_largest_gap_is_a_cell_that_differs_never_two_equal_infinities() -> None:
    inf = float("-inf")
    expected = torch.tensor([[1.0, inf, inf], [0.5, 0.25, inf], [0.1, 0.2, 0.3]])
    mine = expected.clone()
    mine[2, 1] = 0.9  # the one cell that differs
    known = Known(
        stage="masked_scores",
        expected=expected,
        tensors={"masked_scores": expected},
        hidden=torch.isneginf(expected),
        heads=1,
        head_dim=1,
        tokens=3,
    )
    found = explain(mine, known, 7)
    assert found is not None and found.code == "differs"
    assert "1 of the 9 entries" in found.message
    assert "the largest gap is at (2, 1) (yours 0.9, expected 0.2)" in found.message


def test_values_that_round_alike_are_shown_with_the_digits_that_tell_them_apart() -> None:
    expected = torch.tensor([[1.05301, 2.0], [3.0, 4.0]], dtype=torch.float64)
    mine = expected.clone()
    mine[0, 0] = 1.05349
    known = Known("context", expected, {"context": expected}, None, 1, 2, 2)
    found = explain(mine, known, 3)
    assert found is not None and found.code == "differs"
    assert "(0, 0) (yours 1.0535, expected 1.053)" in found.message


def test_bfloat16_arithmetic_passes_at_bfloat16s_tolerance(host: PluginHost) -> None:
    result = check(FILES / "bfloat16_precision.py", reference(host, "trainable"))
    assert result.matches and result.precision == torch.bfloat16


def test_a_known_mistake_hiding_in_bfloat16s_rounding_is_still_named(host: PluginHost) -> None:
    trace = reference(host, "trainable")
    result = check(FILES / "bfloat16_no_scale.py", trace)
    assert result.output is not None and trace.output is not None
    # Within bfloat16's tolerance of the right output (so only the nearer mistake tells)...
    with judged_at(torch.bfloat16):
        assert close(result.output, trace.output)
    # ...and not a pass: the scale left out is named.
    assert not result.matches
    assert [d.code for d in result.diagnoses] == ["scaling"]
    assert result.diagnoses[0].title == "scores not scaled"
