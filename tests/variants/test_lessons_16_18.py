"""What the captions of lessons 16-18 say about the numbers, checked on the lessons' own
options and inputs."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import yaml

from tests.variants.lessons_16_18_oracles import yarn_ramp
from tests.variants.problems import trace
from tracer.inputs import InputSet
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson, shipped_dir
from tracer.plugin_host import PluginHost

ROPE = {"init": "rand", "d_out": 8}


def identical_inputs() -> InputSet:
    """The six copies of one embedding that lesson 16 defines inline."""
    lesson = yaml.safe_load((shipped_dir() / "16_rotary.yaml").read_text(encoding="utf-8"))
    given = next(
        s["defaults"]["inputs"] for s in lesson["steps"] if "inputs" in s.get("defaults", {})
    )
    rows = {tuple(row) for row in given["embeddings"]}
    assert len(rows) == 1 and len(given["embeddings"]) == 6
    return InputSet(
        name="copies",
        tokens=tuple(given["tokens"]),
        embeddings=tuple(tuple(r) for r in given["embeddings"]),
    )


def rope(inputs: Any = "your-journey", **options: Any):  # type: ignore[no-untyped-def]
    return trace("rope", inputs, **ROPE, options=options)


def test_lesson_16_speeds_and_the_first_rotation() -> None:
    got = rope()
    theta = got.stage("angles").tensors["theta"]
    torch.testing.assert_close(theta, torch.tensor([1.0, 0.1, 0.01, 0.001]))  # ten times slower
    rotated = got.stage("rotated").tensors["rotated_queries"]
    torch.testing.assert_close(rotated[0], got.stage("queries").tensors["queries"][0])
    queries = got.stage("queries").tensors["queries"]
    # Each pair keeps its length: (6 tokens, 4 pairs, 2 features) -> the pairs' lengths.
    torch.testing.assert_close(
        rotated.view(6, 4, 2).norm(dim=-1), queries.view(6, 4, 2).norm(dim=-1)
    )


@pytest.mark.parametrize("options", [{}, {"scaling": "yarn", "factor": 4.0}])
def test_lesson_16_copies_give_one_number_per_diagonal(options: dict[str, Any]) -> None:
    scores = rope(identical_inputs(), **options).stage("scores").tensors["scores"]
    for offset in range(-5, 6):
        diagonal = torch.diagonal(scores, offset)
        assert float(diagonal.max() - diagonal.min()) < 5e-5  # 4 decimals agree
    assert scores[4, 1] == pytest.approx(float(scores[3, 0]), abs=5e-5)
    assert abs(float(scores[1, 4] - scores[4, 1])) > 1e-3  # the other direction differs


def test_lesson_16_scalings() -> None:
    plain = rope().stage("angles").tensors["theta"]
    linear = rope(scaling="linear", factor=4.0).stage("angles").tensors["theta"]
    torch.testing.assert_close(linear, plain / 4)
    ntk = rope(scaling="ntk", factor=4.0).stage("angles").tensors["theta"]
    assert float(ntk[0]) == 1.0
    assert float(ntk[3]) == pytest.approx(float(plain[3]) / 4, rel=1e-5)
    yarn = rope(scaling="yarn", factor=4.0).stage("angles").tensors
    assert yarn["ramp"].tolist() == [yarn_ramp(i) for i in range(4)] == [1.0, 1.0, 0.5, 0.0]
    # "Pairs 0 and 1 turn more than 32 times over 2048 tokens ... pair 3 less than once"
    r = [2048 * float(plain[i]) / (2 * math.pi) for i in range(4)]
    assert r[1] > 32 and r[3] < 1 and r[2] == pytest.approx(3.26, abs=0.005)
    torch.testing.assert_close(yarn["turns"], torch.tensor(r))
    # The compare: the paper's ramp in r agrees outside the bounds, not on pair 2.
    paper = rope(scaling="yarn", factor=4.0, ramp="turns").stage("angles").tensors["ramp"]
    assert paper[[0, 1, 3]].tolist() == [1.0, 1.0, 0.0]
    assert float(paper[2]) == pytest.approx((r[2] - 1) / 31, rel=1e-5)
    assert float(yarn["temperature"]) == pytest.approx(0.1 * math.log(4) + 1)
    # YaRN multiplies the score at distance 0 by the temperature squared.
    copies = identical_inputs()
    ratio = (
        rope(copies, scaling="yarn", factor=4.0).stage("scores").tensors["scores"][0, 0]
        / (rope(copies).stage("scores").tensors["scores"][0, 0])
    )
    assert float(ratio) == pytest.approx((0.1 * math.log(4) + 1) ** 2, rel=1e-5)


def test_lesson_16_the_pairings_differ_off_the_diagonal() -> None:
    interleaved = rope().stage("scores").tensors["scores"]
    half = rope(pairing="half").stage("scores").tensors["scores"]
    torch.testing.assert_close(torch.diagonal(interleaved), torch.diagonal(half))
    assert float((interleaved - half).abs().max()) > 0.1


def test_lesson_17_absorption_agrees_up_to_rounding() -> None:
    options = {"heads": 4, "rank": 3, "rope_dim": 2}
    naive = trace("mla", init="rand", d_out=8, options=options)
    absorbed = trace("mla", init="rand", d_out=8, options={**options, "absorb": True})
    assert naive.output is not None and absorbed.output is not None
    assert float((absorbed.output - naive.output).abs().max()) < 1e-5
    assert float(absorbed.stage("check").tensors["difference"].abs().max()) < 1e-5
    key_rope = naive.stage("latent").tensors["key_rope"]
    x, W_kr = naive.context.inputs, naive.stage("projections").tensors["W_kr"]
    torch.testing.assert_close(key_rope[0], x[0] @ W_kr)  # position 0 unturned


def test_lesson_17_normalised_latents_have_a_root_mean_square_of_about_one() -> None:
    options = {"heads": 4, "rank": 3, "rope_dim": 2, "latent_norm": True}
    latent = trace("mla", init="rand", d_out=8, options=options).stage("latent").tensors
    rms = latent["latent"].pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones_like(rms), atol=1e-4, rtol=0)
    raw = latent["latent_before_norm"].pow(2).mean(-1).sqrt()
    assert float(raw.max() - raw.min()) > 0.1  # the embeddings' sizes did differ


def test_lesson_18_claims() -> None:
    paged = trace("paged-kv-cache", options={"block": 2})
    assert paged.output is not None
    assert torch.equal(paged.output, trace("kv-cache").output)  # bit for bit
    blocks = paged.stage("blocks").tensors
    assert blocks["table"].tolist() == [1, 3, 5] and blocks["owner"].tolist() == [2, 1] * 3
    wide = trace("paged-kv-cache", options={"block": 4}).stage("blocks").tensors
    assert wide["table"].tolist() == [1, 3] and wide["slot"].tolist()[-1] == 1  # half full


@pytest.mark.parametrize(
    ("name", "value", "largest"),
    [("17_latent_attention", "absorb-gap", 1e-5), ("18_paged_cache", "paged-gap", 0.0)],
)
def test_the_gaps_the_captions_print_are_rounding_or_nothing(
    name: str, value: str, largest: float, host: PluginHost
) -> None:
    lesson = load_lesson(shipped_dir() / f"{name}.yaml", host)
    named = lesson.value(value)
    assert named is not None
    assert 0 <= LessonRunner(lesson, host).value(named.ref) <= largest
