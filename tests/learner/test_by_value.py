"""Diagnosis by value for mistakes no variant declares: the relation between the learner's
stage tensor and the reference's is named from the numbers alone (transposed, scaled by a
constant, one term left out, summed over one tile, a mask missing on a region, rotated the
other way, blocks in another order), at the line that computed it; and nothing is named where
the numbers do not show it exactly. The learner files and a small plugin are in ``by_value/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.learner.judging.by_value import block_order, region_words
from tracer.learner.judging.relations import Known, explain
from tracer.learner.judging.results import MATCH
from tracer.learner.judging.verdict import check
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

FILES = Path(__file__).parent / "by_value"
TERMS_HOST = PluginHost([FILES / "plugin"], entry_points=False, use_env=False)


def judged(host: PluginHost, name: str, variant: str, **given: Any) -> Any:
    options = given.pop("options", {})
    trace = start_trace(variant, TraceOptions(options=options, **given), host).run_to_end()
    return check(FILES / name, trace)


# (file, variant, trace options, the relation, the learner's line, words the sentence says)
NAMED = [
    ("rope_turned_back.py", "rope", {"d_out": 4}, "opposite-rotation", 11, "by −mθ instead of mθ"),
    ("einsum_transposed.py", "trainable", {}, "transposed-scaled", 9, "transposed"),
    ("mla_no_mask.py", "mla", {"d_out": 4}, "unmasked-region", 26, "above the diagonal"),
    ("paged_pool_order.py", "paged-kv-cache", {}, "blocks-permuted", 21, "blocks of 2"),
    ("flash_d_one_tile.py", "flash-backward", {}, "one-tile", 23, "one tile of 2"),
    (
        "flash_d_one_tile.py",
        "flash-backward",
        {"options": {"causal": True, "tile": 3}},
        "one-tile",
        23,
        "one tile of 3",
    ),
]


@pytest.mark.parametrize(("name", "variant", "given", "code", "line", "words"), NAMED)
def test_an_undeclared_mistake_is_named_from_the_numbers_at_its_line(
    host: PluginHost,
    name: str,
    variant: str,
    given: dict[str, Any],
    code: str,
    line: int,
    words: str,
) -> None:
    result = judged(host, name, variant, **dict(given))
    assert not result.matches
    assert [(d.code, d.line) for d in result.diagnoses] == [(code, line)]
    assert words in result.diagnoses[0].message
    # Never at a line whose numbers are right: no stage the learner got right was computed there.
    right = {r.record.line for r in result.stages if r.status == MATCH and r.record is not None}
    assert line not in right


def test_einsum_scores_transposed_say_the_constant_in_words(host: PluginHost) -> None:
    result = judged(host, "einsum_transposed.py", "trainable")
    assert "times 1/√d_k = 1/√2" in result.diagnoses[0].message


def test_scores_multiplied_by_the_root_of_d_k_say_so(host: PluginHost) -> None:
    result = judged(host, "scale_by_sqrt_d.py", "trainable")
    assert [(d.code, d.line) for d in result.diagnoses] == [("scaling", 8)]
    assert "multiplies the scores by √d_k" in result.diagnoses[0].message


def test_a_declared_equation_names_the_term_left_out() -> None:
    result = judged(TERMS_HOST, "bias_left_out.py", "distance-bias")
    assert [(d.code, d.line) for d in result.diagnoses] == [("missing-term", 8)]
    assert "without its term `bias`: biased = scaled + bias" in result.diagnoses[0].message
    result = judged(TERMS_HOST, "second_softmax_left_out.py", "two-softmaxes", d_out=4)
    assert [(d.code, d.line) for d in result.diagnoses] == [("missing-term", 9)]
    assert "`− 0.5 × second`" in result.diagnoses[0].message


def test_correct_code_for_a_declared_equation_gets_no_diagnosis() -> None:
    result = judged(TERMS_HOST, "terms_correct.py", "distance-bias")
    assert result.matches and result.diagnoses == []


def test_a_declared_mistake_is_still_named_by_its_variant(host: PluginHost) -> None:
    # The softmax Jacobian with its diagonal only is dS = P ∘ dP: the backward variant declares it.
    result = judged(host, "jacobian_diagonal.py", "backward")
    assert [(d.code, d.line) for d in result.diagnoses] == [("rowsum-missing", 19)]


@pytest.mark.parametrize(
    ("name", "variant", "given"),
    [
        # θ_i = base^(−i/d): angles of another size, none of the relations.
        ("rope_theta_exponent.py", "rope", {"d_out": 4}),
        # dK_j += dS_ij Q_i per tile: each tile of dS transposed, not a relation of dK.
        ("flash_dk_no_transpose.py", "flash-backward", {}),
    ],
)
def test_a_mistake_no_relation_fits_gets_no_name(
    host: PluginHost, name: str, variant: str, given: dict[str, Any]
) -> None:
    result = judged(host, name, variant, **given)
    assert not result.matches
    assert [d.code for d in result.diagnoses] == ["differs"]


# Relations measured on tensors made here from their formulas, with torch as the oracle.


def _known(stage: str, expected: torch.Tensor, **tensors: torch.Tensor) -> Known:
    n = expected.shape[-2] if expected.dim() >= 2 else expected.shape[0]
    return Known(stage, expected, {stage: expected, **tensors}, None, 1, 3, n)


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _softmax_backward() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(P, dP, D, dS) for random scores and upstream gradient, dS from torch's autograd."""
    scores = torch.randn(5, 5, generator=_generator(1), dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(5, 5, generator=_generator(2), dtype=torch.float64)
    weights = torch.softmax(scores, dim=-1)
    (weights * upstream).sum().backward()
    assert scores.grad is not None
    P = weights.detach()
    return P, upstream, (P * upstream).sum(-1), scores.grad


def test_a_product_the_reference_computed_is_named_as_the_missing_term() -> None:
    P, dP, D, dS = _softmax_backward()
    known = _known("grad_scores", dS, P=P, dP=dP, D=D)
    found = explain(P * dP, known, 7)  # the Jacobian's diagonal only: dS = P ∘ dP
    assert found is not None and found.code == "missing-term" and found.line == 7
    # dS = P ∘ dP − P ∘ D: the numbers say yours is dS plus P ∘ D, and that is what is said.
    assert "plus P ∘ D" in found.message and "the formula subtracts P ∘ D" in found.message


def test_a_near_miss_is_not_a_missing_term() -> None:
    P, dP, D, dS = _softmax_backward()
    known = _known("grad_scores", dS, P=P, dP=dP, D=D)
    noise = 1e-3 * torch.randn(5, 5, generator=_generator(3), dtype=torch.float64)
    found = explain(P * dP + noise, known, 7)
    assert found is not None and found.code == "differs"


def test_scores_without_the_mask_on_a_region_name_the_region() -> None:
    S = torch.randn(6, 6, generator=_generator(4))
    i, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
    causal = j > i
    expected = S.masked_fill(causal, float("-inf"))
    # Tiles of 2: the diagonal tiles' upper cells left unmasked (FlashAttention's diagonal tile).
    diagonal_tiles = causal & (i // 2 == j // 2)
    mine = S.masked_fill(causal & ~diagonal_tiles, float("-inf"))
    found = explain(mine, _known("masked_scores", expected), 3)
    assert found is not None and found.code == "unmasked-region"
    assert "inside the diagonal tiles (2×2" in found.message
    # A sliding window of 3 that the learner did not apply.
    windowed = S.masked_fill(causal | (j <= i - 3), float("-inf"))
    found = explain(expected, _known("masked_scores", windowed), 3)
    assert found is not None and found.code == "unmasked-region"
    assert "outside the sliding window" in found.message and "holds 3" in found.message


def test_scores_masked_on_a_region_the_reference_leaves_visible_name_it() -> None:
    S = torch.randn(5, 5, generator=_generator(13))
    i, j = torch.arange(5)[:, None], torch.arange(5)[None, :]
    expected = S.masked_fill(j > i, float("-inf"))
    found = explain(S.masked_fill(j >= i, float("-inf")), _known("masked_scores", expected), 6)
    assert found is not None and found.code == "masked-region"
    assert "with a mask on the diagonal (each query's own key)" in found.message


def test_weights_of_the_unmasked_scores_name_the_missing_causal_mask() -> None:
    S = torch.randn(2, 5, 5, generator=_generator(5))  # two heads
    hidden = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    expected = torch.softmax(S.masked_fill(hidden, float("-inf")), dim=-1)
    found = explain(torch.softmax(S, dim=-1), _known("weights", expected, scaled=S), 4)
    assert found is not None and found.code == "unmasked-region"
    assert "softmax of the scaled scores without the mask above the diagonal" in found.message


def test_right_only_inside_a_window_or_on_the_first_rows_says_where() -> None:
    expected = torch.randn(6, 6, generator=_generator(11))
    wrong = torch.randn(6, 6, generator=_generator(12))
    i, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
    band = (j <= i) & (j > i - 2)
    found = explain(torch.where(band, expected, wrong), _known("scores", expected), 2)
    assert found is not None and found.code == "right-on-region"
    assert "inside the sliding window of 2" in found.message
    found = explain(torch.where(i < 2, expected, wrong), _known("context", expected), 2)
    assert found is not None and found.code == "right-on-region"
    assert "on the first 2 rows (0 to 1)" in found.message
    # Right only where both are 0 (masked weights): nothing is said of that region.
    hidden = j > i
    weights = torch.softmax(expected.masked_fill(hidden, float("-inf")), dim=-1)
    other = torch.softmax((2 * expected).masked_fill(hidden, float("-inf")), dim=-1)
    found = explain(other, _known("weights", weights), 2)
    assert found is None or found.code != "right-on-region"


def test_region_words_are_said_only_for_the_regions_a_mask_makes() -> None:
    i, j = torch.arange(4)[:, None], torch.arange(4)[None, :]
    assert region_words(j > i) is not None and "above the diagonal" in str(region_words(j > i))
    assert "on the diagonal" in str(region_words(i == j))
    assert region_words((i + j) % 3 == 0) is None  # no mask makes this region


def test_blocks_are_only_whole_blocks_in_order() -> None:
    assert block_order([4, 5, 2, 3, 0, 1]) == (2, [2, 1, 0])
    assert block_order([2, 3, 0, 1]) == (2, [1, 0])
    assert block_order([1, 0, 3, 2]) is None  # rows swapped inside their blocks
    assert block_order([3, 4, 5, 0, 1, 2]) == (3, [1, 0])
    assert block_order([1, 2, 0, 3]) is None


@pytest.mark.parametrize(("factor", "words"), [(2.0, "times 2"), (0.5, "times 1/2")])
def test_small_constants_are_named_in_words(factor: float, words: str) -> None:
    expected = torch.randn(5, 5, generator=_generator(6))  # d_k = 3, 5 tokens: no size is 2
    found = explain(expected * factor, _known("scaled", expected), 1)
    assert found is not None and found.code == "scaled-by" and words in found.message


def test_transposed_with_an_unnamed_factor_is_not_named() -> None:
    expected = torch.randn(4, 4, generator=_generator(7))
    found = explain(expected.T * 1.37, _known("scores", expected), 1)
    assert found is not None and found.code == "differs"


@pytest.mark.parametrize(
    "shape",
    [(1, 1), (1, 3), (3, 1), (2, 1)],
)
def test_tiny_tensors_where_every_relation_fits_get_no_name(shape: tuple[int, ...]) -> None:
    expected = torch.randn(shape, generator=_generator(8))
    mine = torch.randn(shape, generator=_generator(9))
    found = explain(mine, _known("weights", expected), 1)
    assert found is not None and found.code == "differs"


def test_a_constant_expected_tensor_gets_no_name() -> None:
    expected = torch.zeros(4, 4)
    found = explain(torch.ones(4, 4), _known("scores", expected), 1)
    assert found is not None and found.code == "differs"
    found = explain(torch.full((4, 4), 2.0), _known("scores", torch.ones(4, 4)), 1)
    assert found is not None and found.code == "differs"


def test_a_relation_on_two_cells_only_is_not_named() -> None:
    expected = torch.randn(4, 4, generator=_generator(10))
    mine = expected.clone()
    mine[0, 0] *= 2
    mine[1, 1] *= 2
    found = explain(mine, _known("scores", expected), 1)
    assert found is not None and found.code == "differs"


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 6),
    columns=st.integers(1, 6),
    heads=st.integers(0, 2),
    seeds=st.tuples(st.integers(0, 10_000), st.integers(10_001, 20_000)),
    stage=st.sampled_from(["scores", "weights", "context", "grad_scores", "masked_scores"]),
)
def test_an_unrelated_pair_gets_no_name(
    rows: int, columns: int, heads: int, seeds: tuple[int, int], stage: str
) -> None:
    shape = (heads, rows, columns) if heads else (rows, columns)
    expected = torch.randn(shape, generator=_generator(seeds[0]))
    mine = torch.randn(shape, generator=_generator(seeds[1]))
    others = {
        name: torch.randn(shape, generator=_generator(seeds[0] + k + 1))
        for k, name in enumerate(("values", "P", "D"))
    }
    known = Known(stage, expected, {stage: expected, **others}, None, max(heads, 1), 2, rows)
    found = explain(mine, known, 1)
    assert found is not None and found.code == "differs", found


def _rotary_known(x: torch.Tensor, angle: torch.Tensor) -> Known:
    """The reference's tensors for interleaved rotary embeddings, computed from the formula."""
    cos, sin = angle.cos(), angle.sin()
    a, b = x[:, 0::2], x[:, 1::2]
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    tensors = {"queries": x, "cos": cos, "sin": sin, "rotated_queries": turned}
    return Known("rotated", turned, tensors, None, 1, x.shape[-1], x.shape[0])


def test_only_the_opposite_angle_is_called_opposite() -> None:
    x = torch.randn(5, 4, generator=_generator(0))
    angle = torch.arange(5.0)[:, None] * torch.tensor([1.0, 0.01])
    known = _rotary_known(x, angle)
    back = _rotary_known(x, -angle).expected  # by −mθ, from the same formula
    found = explain(back, known, 3)
    assert found is not None and found.code == "opposite-rotation"
    # Twice the angle, or the right angle on other features, is not "the opposite way".
    twice = _rotary_known(x, 2 * angle).expected
    found = explain(twice, known, 3)
    assert found is None or found.code != "opposite-rotation"
    other = _rotary_known(x.flip(0), angle).expected
    found = explain(other, known, 3)
    assert found is None or found.code != "opposite-rotation"


def test_a_vector_kept_as_a_column_is_the_stage_itself(host: PluginHost) -> None:
    """D = rowsum(dO ∘ O) with keepdim=True holds the variant's (n,) delta: it is matched where
    it was computed, not reported as another route (nor blamed for a later mistake)."""
    result = judged(host, "flash_d_column.py", "flash-backward")
    assert result.matches and result.diagnoses == []
    status = {r.stage.name: r.status for r in result.stages}
    assert status["delta"] == MATCH
    delta = next(r for r in result.stages if r.stage.name == "delta")
    assert delta.record is not None and delta.record.line == 15


def test_cells_never_written_are_nan_and_said_so_every_run(host: PluginHost) -> None:
    # torch.empty_like hands back whatever the memory held: a check that read it would answer
    # differently from run to run (CI once named rope_turned_back.py's empty_like line "off by
    # a constant factor"). The recorder fills such tensors with NaN, so the cells the learner
    # never wrote show, at the line that made the tensor, and two runs say the same.
    first = judged(host, "rope_half_written.py", "rope", d_out=4)
    second = judged(host, "rope_half_written.py", "rope", d_out=4)
    assert not first.matches
    nan = [d for d in first.diagnoses if d.code == "nan"]
    assert (
        nan and "what empty_like() made at line 9 has cells your code never wrote" in nan[0].message
    )
    assert [(d.code, d.line, d.message) for d in first.diagnoses] == [
        (d.code, d.line, d.message) for d in second.diagnoses
    ]


def test_numpy_cells_never_written_are_nan_and_the_first_step_is_the_first_write(
    host: PluginHost,
) -> None:
    # np.empty_like, too, hands back whatever the memory held. The sandbox fills it, and an
    # array not written yet is no step: the first divergence is the line that wrote half.
    result = judged(host, "numpy_half_written.py", "trainable")
    assert not result.matches
    nan = [d for d in result.diagnoses if d.code == "nan"]
    assert nan and "what empty_like() made at line 9 has cells" in nan[0].message
    assert result.diverging is not None and result.diverging.record is not None
    assert result.diverging.record.line == 10
