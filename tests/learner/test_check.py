"""``attn check``: the corpus of buggy implementations, correct ones, and failing files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tracer.inputs import load_inputs
from tracer.learner.check import DIFFERS, MATCH, OTHER_ROUTE, check
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace

Attn = Callable[..., tuple[int, str, str]]
CORPUS = Path(__file__).parent / "corpus"

# One file per listed mistake: (file, variant, diagnosis code, the learner's line it names).
MISTAKES = [
    ("softmax_dim.py", "trainable", "softmax-dim", 9),
    ("missing_scaling.py", "trainable", "scaling", 9),
    ("wrong_scaling.py", "trainable", "scaling", 10),
    ("no_renormalise.py", "masked", "renormalise", 12),
    ("discarded_masked_fill.py", "masked", "discarded-masked-fill", 11),
    ("mask_diagonal.py", "masked", "mask-diagonal", 10),
    ("fill_zero.py", "masked", "fill-zero", 11),
    ("mutates_inputs.py", "vectorized", "inputs-mutated", 7),
    ("mutates_inputs_loop.py", "vectorized", "inputs-mutated", 6),
    ("transpose.py", "trainable", "transpose", 8),
]

CORRECT = [
    ("correct_naive_loop.py", "naive-loop", ()),
    ("correct_vectorized.py", "vectorized", ()),
    ("correct_trainable.py", "trainable", ()),
    ("correct_trainable.py", "trainable", ("--init", "linear", "--d-out", "4", "--seed", "7")),
    ("correct_masked_inf.py", "masked", ()),
    ("correct_masked_renormalise.py", "masked", ()),
    ("correct_multihead_wrapper.py", "multihead-wrapper", ()),
    ("correct_multihead_wrapper.py", "multihead-wrapper", ("--heads", "3", "--init", "linear")),
    ("correct_multihead.py", "multihead", ()),
    ("correct_multihead.py", "multihead", ("--heads", "3", "--d-out", "6", "--init", "randn")),
]


def reference(host: PluginHost, variant: str, **options: object):  # type: ignore[no-untyped-def]
    return start_trace(variant, TraceOptions(**options), host).run_to_end()  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "variant", "code", "line"), MISTAKES)
def test_each_mistake_gets_its_diagnosis_at_its_line(
    host: PluginHost, name: str, variant: str, code: str, line: int
) -> None:
    result = check(CORPUS / name, reference(host, variant))
    assert not result.matches
    assert [(d.code, d.line) for d in result.diagnoses] == [(code, line)]


@pytest.mark.parametrize(("name", "variant", "code", "line"), MISTAKES)
def test_mistakes_exit_1_and_print_the_diagnosis(
    attn: Attn, name: str, variant: str, code: str, line: int
) -> None:
    path = CORPUS / name
    status, out, err = attn("check", str(path), "--against", variant)
    assert status == 1, err
    source = path.read_text().splitlines()[line - 1].strip()
    assert f"[{code}]\n  {name}:{line}  {source}\n" in out


@pytest.mark.parametrize(
    ("name", "stage", "status", "line"),
    [
        ("transposed_weights.py", "weights", DIFFERS, 9),
        ("correct_transposed_route.py", "weights", MATCH, 9),
    ],
)
def test_a_stage_transposed_after_it_was_right_is_not_ok(
    host: PluginHost, name: str, stage: str, status: str, line: int
) -> None:
    result = check(CORPUS / name, reference(host, "trainable"))
    found = next(r for r in result.stages if r.stage.name == stage)
    assert (found.status, found.line) == (status, line)
    if status == DIFFERS:
        assert found.record is not None and found.record.value is not None
        expected = found.stage.tensors[stage]
        torch.testing.assert_close(found.record.value, expected.T)  # what the line assigned
        assert [(d.code, d.line) for d in result.diagnoses] == [("transpose", line)]


@pytest.mark.parametrize(("name", "variant", "options"), CORRECT)
def test_correct_implementations_pass(
    attn: Attn, name: str, variant: str, options: tuple[str, ...]
) -> None:
    status, out, err = attn("check", str(CORPUS / name), "--against", variant, *options)
    assert status == 0, out + err
    assert out.rstrip().endswith(
        f"result: your output matches '{variant}' (within 1e-5). Well done!"
    )
    assert "DIFFERS" not in out


def test_both_masking_routes_match_with_the_other_route_marked(host: PluginHost) -> None:
    trace = reference(host, "masked")
    route_2 = {
        r.stage.name: r.status for r in check(CORPUS / "correct_masked_inf.py", trace).stages
    }
    # Masking the raw scores in place, then scaling: the unmasked scaled scores never exist.
    assert route_2["masked_scores"] == MATCH and route_2["scaled"] == OTHER_ROUTE
    route_1 = check(CORPUS / "correct_masked_renormalise.py", trace)
    statuses = {r.stage.name: r.status for r in route_1.stages}
    assert statuses["renormalized"] == MATCH and statuses["masked_scores"] == OTHER_ROUTE
    assert statuses["weights"] == statuses["context"] == MATCH


def test_stages_name_the_learners_lines(host: PluginHost) -> None:
    result = check(CORPUS / "correct_trainable.py", reference(host, "trainable"))
    lines = {r.stage.name: r.line for r in result.stages}
    assert lines == {
        "queries": 5, "keys": 6, "values": 7, "scores": 8, "scaled": 9, "weights": 9, "context": 10
    }  # fmt: skip


def test_first_divergence_is_the_stage_after_the_last_match(attn: Attn) -> None:
    status, out, _ = attn("check", str(CORPUS / "wrong_scaling.py"), "--against", "trainable")
    assert status == 1
    assert "  ok       scores   your line 8\n  DIFFERS  scaled\n" in out
    assert "first divergence: stage 'scaled' - Scaled scores\n" in out
    assert "  wrong_scaling.py:10  scaled = scores / d_k\n" in out
    assert "line 10 divides the scores by d_k = 2 instead of √d_k ≈ 1.414" in out


def test_the_learner_cannot_corrupt_the_reference(host: PluginHost) -> None:
    trace = reference(host, "vectorized")
    before = {s.name: {n: t.clone() for n, t in s.tensors.items()} for s in trace.stages}
    result = check(CORPUS / "mutates_inputs.py", trace)
    embeddings = torch.tensor(load_inputs("your-journey").embeddings)
    assert torch.equal(trace.context.inputs, embeddings)
    for stage in trace.stages:
        for name, tensor in stage.tensors.items():
            assert torch.equal(tensor, before[stage.name][name])
    # Its output equals the reference, yet the check fails: the inputs were overwritten.
    assert result.output is not None and torch.allclose(result.output, result.expected_output)
    assert not result.matches


def test_mutating_inputs_with_a_matching_output_still_exits_1(attn: Attn) -> None:
    status, out, _ = attn("check", str(CORPUS / "mutates_inputs.py"), "--against", "vectorized")
    assert status == 1
    assert "result: your output matches, but your function changed its arguments" in out


def test_returning_nothing_is_a_mismatch_that_says_so(attn: Attn) -> None:
    status, out, _ = attn("check", str(CORPUS / "returns_none.py"), "--against", "vectorized")
    assert status == 1
    assert "result: attention() returned None: did you forget `return`?" in out


def assert_only_learner_frames(err: str, name: str) -> None:
    for line in err.splitlines():
        if line.startswith("  File "):
            assert f'{name}"' in line, err
    assert "tracer" not in err and "site-packages" not in err


def test_syntax_error_shows_the_learners_line(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(
        "import torch\n\ndef attention(inputs):\n    return torch.softmax(inputs, dim=-1\n"
    )
    status, out, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2 and out == ""
    assert err.startswith(f'  File "{path}", line 4\n    return torch.softmax(inputs, dim=-1\n')
    assert err.rstrip().endswith("SyntaxError: '(' was never closed")


def test_exception_inside_attention_is_the_learners_traceback(attn: Attn) -> None:
    path = CORPUS / "raises.py"
    status, out, err = attn("check", str(path), "--against", "trainable")
    assert status == 2 and out == ""
    assert err.startswith(
        f'Traceback (most recent call last):\n  File "{path}", line 7, in attention\n'
        "    scores = queries @ keys\n"
    )
    assert err.rstrip().endswith(
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (6x2 and 6x2)"
    )
    assert "note:" not in err  # no weight was transposed: no word about layouts
    assert_only_learner_frames(err, "raises.py")


def test_a_weight_transposed_as_for_nn_linear_is_explained(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "linear_layout.py"
    path.write_text(
        "import torch\n\n\ndef attention(inputs, W_query, W_key, W_value):\n"
        "    queries = inputs @ W_query.T\n    return queries\n"
    )
    status, _, err = attn("check", str(path), "--against", "trainable")
    assert status == 2
    assert err.rstrip().endswith(
        "note: line 5 uses W_query.T as if the weights were nn.Linear's (d_out×d_in, x @ W.T); "
        "attn check passes them as d_in×d_out (3×2 here), applied as inputs @ W, so drop the .T"
    )


def test_exception_while_loading_the_file(attn: Attn) -> None:
    path = CORPUS / "fails_on_import.py"
    status, _, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2
    assert f'  File "{path}", line 1, in <module>\n' in err
    assert err.rstrip().endswith("NameError: name 'undefined_name' is not defined")
    assert_only_learner_frames(err, "fails_on_import.py")


def test_helpers_in_the_learners_file_stay_in_the_traceback(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "helper.py"
    path.write_text(
        "def scores(x):\n    return x @ x\n\n\ndef attention(inputs):\n    return scores(inputs)\n"
    )
    status, _, err = attn("check", str(path), "--against", "vectorized")
    assert status == 2
    assert [line for line in err.splitlines() if line.startswith("  File")] == [
        f'  File "{path}", line 6, in attention',
        f'  File "{path}", line 2, in scores',
    ]


@pytest.mark.parametrize(
    ("name", "variant", "message"),
    [
        (
            "nothing_to_call.py",
            "vectorized",
            "defines no function 'attention' and no nn.Module; write def attention(inputs)",
        ),
        (
            "several_functions.py",
            "vectorized",
            "has no 'attention' and several candidates (attention_v1, attention_v2); "
            "pick one with --function NAME",
        ),
        (
            "wrong_signature.py",
            "trainable",
            "attention(inputs) does not fit: it should be def attention(inputs, W_query, W_key, W_value)",
        ),
    ],
)
def test_unusable_files_are_one_line(attn: Attn, name: str, variant: str, message: str) -> None:
    path = CORPUS / name
    status, out, err = attn("check", str(path), "--against", variant)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(str(path)) and err.rstrip().endswith(message)


def test_the_one_function_is_checked_and_named(attn: Attn) -> None:
    status, out, _ = attn("check", str(CORPUS / "other_name.py"), "--against", "vectorized")
    assert status == 0
    assert out.splitlines()[1] == (
        "  (no 'attention' in the file, so it checks function self_attention)"
    )


def test_function_option_picks_among_several(attn: Attn) -> None:
    path = str(CORPUS / "several_functions.py")
    status, _, _ = attn("check", path, "--against", "vectorized", "--function", "attention_v1")
    assert status == 0
    status, out, _ = attn("check", path, "--against", "vectorized", "--function", "attention_v2")
    assert status == 1 and "[softmax-dim]" in out
    status, _, err = attn("check", path, "--against", "vectorized", "--function", "attn")
    assert (status, err) == (
        2,
        f"{path}: defines nothing named 'attn' (it has attention_v1, attention_v2)\n",
    )


def test_missing_file_and_unknown_variant(attn: Attn, tmp_path: Path) -> None:
    status, _, err = attn("check", str(tmp_path / "nope.py"), "--against", "vectorized")
    assert (status, err) == (2, f"attn: file not found: {tmp_path / 'nope.py'}\n")
    status, _, err = attn("check", str(CORPUS / "correct_vectorized.py"), "--against", "vectorised")
    assert status == 2 and "unknown variant 'vectorised'" in err and "vectorized" in err


def test_query_option_is_refused(attn: Attn) -> None:
    status, _, err = attn(
        "check", str(CORPUS / "correct_vectorized.py"), "--against", "vectorized", "--query", "1"
    )
    assert status == 2
    assert err == "attn: attn check compares every query at once; --query is for attn trace\n"


def test_mistake_on_a_multihead_variant_is_found_per_head(host: PluginHost, tmp_path: Path) -> None:
    source = (CORPUS / "correct_multihead.py").read_text()
    broken = source.replace(
        "weights = torch.softmax(scores / head_dim**0.5, dim=-1)",
        "weights = torch.softmax(scores / head_dim**0.5, dim=1)",
    )
    assert broken != source
    path = tmp_path / "mine.py"
    path.write_text(broken)
    result = check(path, reference(host, "multihead", init="linear", d_out=4))
    assert [d.code for d in result.diagnoses] == ["softmax-dim"]
    assert result.diverging is not None and result.diverging.stage.name == "weights"


def test_json_report(attn: Attn) -> None:
    status, out, _ = attn(
        "check", str(CORPUS / "softmax_dim.py"), "--against", "trainable", "--json"
    )
    assert status == 1
    report = json.loads(out)
    assert report["matches"] is False
    assert report["diverging"] == {"stage": "weights", "line": 9}
    assert [(d["code"], d["line"]) for d in report["diagnoses"]] == [("softmax-dim", 9)]
    assert report["stages"][0] == {"name": "queries", "status": "match", "line": 5}
    status, out, err = attn("check", str(CORPUS / "raises.py"), "--against", "trainable", "--json")
    assert status == 2
    assert json.loads(out)["error"] == err


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        ("scores / head_dim**0.5", "scores / head_dim", "scaling"),
        ("scores / head_dim**0.5", "scores", "scaling"),
        (
            "scores = scores.masked_fill(mask, -torch.inf)",
            "scores.masked_fill(mask, -torch.inf)",
            "discarded-masked-fill",
        ),
        ("mask, -torch.inf", "mask, 0.0", "fill-zero"),
    ],
)
def test_multihead_mistakes(
    host: PluginHost, tmp_path: Path, old: str, new: str, code: str
) -> None:
    source = (CORPUS / "correct_multihead.py").read_text()
    assert old in source
    path = tmp_path / "mine.py"
    path.write_text(source.replace(old, new))
    result = check(path, reference(host, "multihead", init="linear", d_out=6, extra={"heads": 3}))
    assert [d.code for d in result.diagnoses][:1] == [code]


def test_a_wrong_loop_is_blamed_at_its_own_line(attn: Attn) -> None:
    """Writes through a row view (scores[i][j]) count as writes to scores, and nothing after
    a stage that never matched is called "another route"."""
    path = CORPUS / "loop_row_view.py"
    status, out, _ = attn("check", str(path), "--against", "naive-loop")
    assert status == 1
    assert "  DIFFERS  scores\n  DIFFERS  weights\n  DIFFERS  context\n" in out
    assert "  loop_row_view.py:9  scores[i][j] = torch.dot(inputs[i], inputs[i])\n" in out


def test_a_mask_never_stands_for_scores(attn: Attn) -> None:
    """The learner builds the mask and never applies it: no masked stage is credited to it."""
    status, out, _ = attn("check", str(CORPUS / "never_masks.py"), "--against", "masked", "--json")
    assert status == 1
    stages = {s["name"]: s for s in json.loads(out)["stages"]}
    assert stages["scaled"]["status"] == "match" and stages["scaled"]["line"] == 9
    for name in ("masked_scores", "weights", "context"):
        assert stages[name]["status"] == "differs", stages[name]
    assert [(d["code"], d["line"]) for d in json.loads(out)["diagnoses"]] == [("mask-unused", 10)]


def test_heads_one_column_wide_are_checked_again_wider(attn: Attn) -> None:
    """At the multihead defaults √d_k = 1, so a missing scale passes; the check says so."""
    path = Path(__file__).parent / "realistic" / "mh_missing_scale_defaults.py"
    status, out, _ = attn("check", str(path), "--against", "multihead")
    assert status == 1
    assert out.startswith(
        "(with these options every head is 1 wide, so √d_k = 1 and a missing scale would not "
        "show; checked again with --d-out 4)\n"
    )
    assert "[scaling]\n  mh_missing_scale_defaults.py:12" in out
    status, out, _ = attn("check", str(CORPUS / "correct_multihead.py"), "--against", "multihead")
    assert status == 0 and "Well done!" in out
