"""induction: the trained model's stages equal a forward pass written here in numpy, its
heads do what the lesson says, its inputs and weights are checked, and the training script
still trains."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.variants.induction_oracle import DEFAULT, LETTERS, WEIGHTS, numpy_forward
from tests.variants.problems import HOST
from tracer.errors import UsageError
from tracer.inputs import InputSet, load_inputs
from tracer.tracing.runner import TraceOptions, start_trace

ROOT = Path(__file__).resolve().parents[2]

Attn = Callable[..., tuple[int, str, str]]


def stages(inputs: str | InputSet | None = None, **options: int) -> dict[str, dict[str, Any]]:
    trace = start_trace("induction", TraceOptions(inputs=inputs, options=options), HOST)
    return {stage.name: stage.tensors for stage in trace.run_to_end().stages}


def letters_set(letters: str) -> InputSet:
    return InputSet(name="letters", tokens=tuple(letters), embeddings=())


def close(got: torch.Tensor, expected: np.ndarray) -> None:
    np.testing.assert_allclose(got.double().numpy(), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("letters", [None, "ABCDEABCDE", "QPKTQPKTQ", "H", "ABCABCPQR"])
def test_every_stage_equals_the_numpy_forward_pass(letters: str | None) -> None:
    got = stages(letters_set(letters) if letters else None)
    expected = numpy_forward(letters or DEFAULT)
    close(got["embed"]["residual"], expected["embed"])
    for layer in range(2):
        scores = got[f"layer{layer}_scores"]["scores"]
        weights = expected[f"layer{layer}_weights"]
        # Softmax of the scores gives the weights: the hidden future holds -inf.
        assert bool(torch.isinf(scores[weights == 0]).all()) or weights.min() > 0
        close(got[f"layer{layer}_weights"]["weights"], weights)
        close(got[f"layer{layer}_outputs"]["outputs"], expected[f"layer{layer}_outputs"])
        close(got[f"layer{layer}_residual"]["residual"], expected[f"layer{layer}_residual"])
    close(got["logits"]["logits"], expected["logits"])
    prediction = got["prediction"]
    assert prediction["predicted"].tolist() == expected["logits"].argmax(axis=1).tolist()


def test_run_variant_uses_the_variants_own_inputs() -> None:
    # tracer.testing is what plugin authors test with: like attn trace, it must fall back to
    # the variant's own repeated letters, not to your-journey (whose words are not in its vocabulary).
    from tracer.testing import run_variant

    trace = run_variant("induction")
    assert trace.context.tokens == tuple(DEFAULT)
    expected = numpy_forward(DEFAULT)
    close(trace.stage("logits").tensors["logits"], expected["logits"])


def test_focus_keeps_one_layer_and_one_head() -> None:
    expected = numpy_forward(DEFAULT)
    got = stages(layer=1, head=2)
    close(got["layer1_weights"]["weights"], expected["layer1_weights"][2])
    assert got["layer0_weights"] == {}  # out of focus: computed, not shown
    assert got["layer0_scores"] == {}
    close(got["layer0_residual"]["residual"], expected["layer0_residual"])
    got = stages(head=0)
    close(got["layer0_weights"]["weights"], expected["layer0_weights"][0])
    close(got["layer1_outputs"]["outputs"], expected["layer1_outputs"][0])


def previous_token_weight(weights: list[list[float]]) -> float:
    return float(np.mean([weights[i][i - 1] for i in range(1, len(weights))]))


def induction_weight(weights: list[list[float]], tokens: list[str]) -> float:
    """Mean weight from each repeated token to the key just after its earlier occurrence."""
    found = []
    for i, token in enumerate(tokens):
        earlier = [j for j in range(i) if tokens[j] == token]
        if earlier and earlier[-1] + 1 < i:
            found.append(weights[i][earlier[-1] + 1])
    return float(np.mean(found))


def test_done_when_from_the_json(attn: Attn) -> None:
    """`attn trace induction --json`: a previous-token head and an induction head, >= 0.5."""
    status, out, err = attn("trace", "induction", "--json")
    assert status == 0, err
    document = json.loads(out)
    tokens = document["tokens"]
    assert tokens[:10] == tokens[10:] and len(set(tokens[:10])) == 10
    heads = {
        (int(stage["name"][5]), h): weights
        for stage in document["stages"]
        if stage["name"].endswith("_weights")
        for h, weights in enumerate(stage["tensors"]["weights"])
    }
    assert max(previous_token_weight(w) for w in heads.values()) >= 0.5
    assert max(induction_weight(w, tokens) for w in heads.values()) >= 0.5


def test_the_repeat_is_predicted() -> None:
    got = stages()["prediction"]
    # Positions 10.. read the repeat: each predicts the letter that followed it the first time.
    assert got["correct"][10:].all()
    assert got["predicted"].tolist()[10:19] == [LETTERS.index(c) for c in "JOSBIMLNG"]


def test_an_inputs_file_of_letters_alone(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "letters.yaml"
    path.write_text("tokens: [C, A, T, C, A]\n")
    assert load_inputs(str(path)).embeddings == ()
    status, out, _ = attn("trace", "induction", "--inputs", str(path), "--stages", "prediction")
    assert status == 0 and "tokens: C A T C A" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--inputs", "your-journey"],
            "attn: token 0 'Your' is not in the induction model's vocabulary: its tokens are "
            "the letters A to T",
        ),
        (["-o", "head=4"], "attn: -o head must be at most 3, got 4"),
        (["-o", "layer=2"], "attn: -o layer must be at most 1, got 2"),
        (
            ["--dropout", "0.1"],
            "attn: variant 'induction' runs a trained model as it predicts; leave --dropout at 0",
        ),
    ],
)
def test_bad_inputs_are_one_line(attn: Attn, argv: list[str], message: str) -> None:
    assert attn("trace", "induction", *argv) == (2, "", message + "\n")


def test_too_many_tokens(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(f"tokens: [{', '.join('AB' * 13)}]\n")
    status, out, err = attn("trace", "induction", "--inputs", str(path))
    assert (status, out) == (2, "")
    assert err == "attn: the induction model reads at most 24 tokens; the inputs have 26\n"


def test_tokens_alone_for_a_variant_that_needs_embeddings(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "letters.yaml"
    path.write_text("tokens: [C, A, T]\n")
    status, _, err = attn("trace", "masked", "--inputs", str(path))
    assert status == 2
    assert err == f"attn: {path} gives tokens but no embeddings, which variant 'masked' needs\n"


def test_a_damaged_weights_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.builtin_plugins import induction

    assert hashlib.sha256(WEIGHTS.read_bytes()).hexdigest() in (
        WEIGHTS.with_suffix(".sha256").read_text()
    )
    copy = tmp_path / WEIGHTS.name
    shutil.copy(WEIGHTS, copy)
    shutil.copy(WEIGHTS.with_suffix(".sha256"), copy.with_suffix(".sha256"))
    monkeypatch.setattr(induction, "WEIGHTS", copy)
    assert set(induction.load_model()) >= {"W_E", "W_pos", "W_U"}
    data = bytearray(copy.read_bytes())
    data[-100] ^= 1
    copy.write_bytes(bytes(data))
    with pytest.raises(UsageError, match="does not match its sha256 checksum"):
        induction.load_model()


def load_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "train_induction", ROOT / "scripts" / "train_induction.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_induction"] = module
    spec.loader.exec_module(module)
    return module


def test_the_training_script_still_trains(tmp_path: Path) -> None:
    script = load_script()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        params, losses = script.train(steps=200, seed=3, batch=16)
        again, _ = script.train(steps=2, seed=3, batch=16)
        first, _ = script.train(steps=2, seed=3, batch=16)
    finally:
        torch.set_num_threads(threads)
    # The loss falls (it starts near chance, log 20 = 3.0) and a seed fixes the weights.
    assert np.mean(losses[-20:]) < np.mean(losses[:10]) - 0.3
    assert all(torch.equal(again[name], first[name]) for name in again)
    shipped = torch.load(WEIGHTS, weights_only=True)
    assert {name: t.shape for name, t in params.items()} == {
        name: t.shape for name, t in shipped.items()
    }
    out = tmp_path / "w.pt"
    digest = script.save(params, out)
    assert out.with_suffix(".sha256").read_text() == f"{digest}  w.pt\n"
    assert script.save(params, tmp_path / "elsewhere.pt") == digest  # bytes not tied to a name


def test_lesson_13_claims() -> None:
    """What the captions of lessons/13_induction_heads.yaml say about the numbers."""
    import yaml
    from tracer.builtin_plugins.induction import REPEATED

    from tracer.lessons.loader import shipped_dir

    lesson = yaml.safe_load((shipped_dir() / "13_induction_heads.yaml").read_text())
    # "the induction variant's own inputs": ten distinct letters, then the same ten again.
    assert tuple(lesson["inputs"]["tokens"]) == REPEATED.tokens
    assert "".join(REPEATED.tokens) == DEFAULT
    expected = numpy_forward(DEFAULT)
    rows = range(1, 20)
    layer0 = expected["layer0_weights"]
    # "Head 2 puts most of every row's weight (after the first) ... on the previous token."
    assert all(layer0[2, i, i - 1] > 0.5 for i in rows)
    # "Head 1 does the same on most rows, not all."; no other head does it on most rows.
    on_previous = [sum(layer0[h, i, i - 1] > 0.5 for i in rows) for h in range(4)]
    assert 10 <= on_previous[1] < 19
    assert on_previous[0] < 10 and on_previous[3] < 10
    # Layer 1: from position 10 on, most weight nine places left of the diagonal, in all
    # four heads, "head 3 puts less than half its weight there in one row".
    layer1 = expected["layer1_weights"]
    on_stripe = [sum(layer1[h, i, i - 9] > 0.5 for i in range(10, 20)) for h in range(4)]
    assert on_stripe == [10, 10, 10, 9]
    # The cells quiz: from position 14 (the second B) every head of layer 1 puts over half
    # its weight on position 5 ("for every head"), the I after the first B.
    assert DEFAULT[14] == DEFAULT[4] == "B" and DEFAULT[5] == "I"
    assert [set(np.flatnonzero(layer1[h, 14] > 0.5)) for h in range(4)] == [{5}] * 4
    predicted = expected["logits"].argmax(axis=1)
    actual = [LETTERS.index(c) for c in DEFAULT[1:]]
    correct = [int(p == a) for p, a in zip(predicted, actual, strict=False)]
    # "The first ten are all wrong ... From position 10 on, every prediction is right."
    assert correct == [0] * 10 + [1] * 9
    assert LETTERS[predicted[14]] == "I"  # the choice quiz's answer
    assert LETTERS[predicted[19]] == "R" == DEFAULT[10]  # the last G: what followed G before
    # "two layers of attention, four heads each", "letters A to T"
    model = torch.load(WEIGHTS, weights_only=True)
    assert model["0.W_Q"].shape[0] == model["1.W_Q"].shape[0] == 4
    assert model["W_E"].shape[0] == len(LETTERS) == 20


def test_padding_is_refused(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "padded.yaml"
    path.write_text("tokens: [A, B, A]\npadding: [false, false, true]\n")
    assert attn("trace", "induction", "--inputs", str(path)) == (
        2,
        "",
        "attn: variant 'induction' reads every token; its inputs cannot have padding\n",
    )
