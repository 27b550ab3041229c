"""rope against Hugging Face transformers' own rotary code: every scaling, both pairings.

The oracle is transformers itself: ``LlamaRotaryEmbedding`` built from a ``LlamaConfig``
whose ``rope_parameters`` name the scaling (its inverse frequencies, its attention factor,
the cos and sin it returns), and its two ways of turning a query and a key,
``apply_rotary_pos_emb`` (pairs i and i + d/2) and DeepSeek-V3's
``apply_rotary_pos_emb_interleave`` (pairs 2i and 2i + 1, returned de-interleaved).
Where transformers has no type of its own, the check goes through one that computes the
same thing: ``ntk`` is ``dynamic`` at the text length where their bases agree, and YaRN's
printed ramp (linear in the turns r) is ``llama3``'s smoothing with β_slow and β_fast as
its bounds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from tracer.errors import TracerError
from tracer.inputs import InputSet
from tracer.testing import run_variant

transformers = pytest.importorskip("transformers")
from transformers import AutoConfig, LlamaConfig  # noqa: E402
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (  # noqa: E402
    apply_rotary_pos_emb_interleave,
)
from transformers.models.llama.modeling_llama import (  # noqa: E402
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

PAIRINGS = ("interleaved", "half")


def tokens(n: int, width: int = 5, seed: int = 0) -> InputSet:
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randn(n, width, generator=generator)
    return InputSet(
        name=f"random-{n}",
        tokens=tuple(f"t{i}" for i in range(n)),
        embeddings=tuple(tuple(float(v) for v in row) for row in rows),
    )


def hf_rotary(
    d: int, rope_parameters: dict[str, Any], n: int, max_position_embeddings: int
) -> tuple[torch.Tensor, float, torch.Tensor, torch.Tensor]:
    """transformers' (inv_freq, attention factor, cos, sin) for positions 0..n-1."""
    config = LlamaConfig(
        hidden_size=2 * d,
        num_attention_heads=2,
        head_dim=d,
        max_position_embeddings=max_position_embeddings,
        rope_parameters=dict(rope_parameters),
    )
    rotary = LlamaRotaryEmbedding(config)
    cos, sin = rotary(torch.zeros(1, n, d), torch.arange(n)[None])  # dynamic updates here
    return rotary.inv_freq.clone(), float(rotary.attention_scaling), cos, sin


def hf_turned(
    queries: torch.Tensor, keys: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' rotation of (tokens, d) queries and keys, in our feature order."""
    q, k = queries[None, None], keys[None, None]
    if pairing == "half":
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return q[0, 0], k[0, 0]
    q, k = apply_rotary_pos_emb_interleave(q, k, cos, sin)
    d = queries.shape[-1]
    # transformers returns pair i's members at i and i + d/2; ours are at 2i and 2i + 1.
    order = torch.arange(d).view(d // 2, 2).T.reshape(d)
    back = torch.empty_like(order)
    back[order] = torch.arange(d)
    return q[0, 0][..., back], k[0, 0][..., back]


def check_against_transformers(
    options: dict[str, Any],
    rope_parameters: dict[str, Any],
    *,
    d: int = 8,
    n: int = 6,
    max_position_embeddings: int = 8192,
    pairing: str = "interleaved",
) -> Any:
    got = run_variant(
        "rope", inputs=tokens(n), init="randn", d_out=d, options={**options, "pairing": pairing}
    )
    inv_freq, attention, cos, sin = hf_rotary(d, rope_parameters, n, max_position_embeddings)
    angles = got.stage("angles").tensors
    torch.testing.assert_close(angles["theta"], inv_freq, rtol=2e-6, atol=0)
    temperature = float(angles["temperature"]) if "temperature" in angles else 1.0
    assert temperature == pytest.approx(attention, rel=1e-6)  # shown as float32
    positions = got.stage("positions").tensors
    torch.testing.assert_close(
        torch.cos(positions["angle"]) * temperature, cos[0, :, : d // 2], rtol=1e-5, atol=1e-6
    )
    queries = got.stage("queries").tensors["queries"]
    keys = got.stage("keys").tensors["keys"]
    want_q, want_k = hf_turned(queries, keys, cos, sin, pairing)
    rotated = got.stage("rotated").tensors
    torch.testing.assert_close(rotated["rotated_queries"], want_q, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rotated["rotated_keys"], want_k, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(
        got.stage("scores").tensors["scores"], want_q @ want_k.T, rtol=1e-5, atol=1e-4
    )
    return got


BASE = 10000.0
CASES = {
    "none": ({}, {"rope_type": "default", "rope_theta": BASE}),
    "linear": (
        {"scaling": "linear", "factor": 4.0},
        {"rope_type": "linear", "factor": 4.0, "rope_theta": BASE},
    ),
    "yarn, the defaults": (
        {"scaling": "yarn", "factor": 4.0},
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 2048,
            "rope_theta": BASE,
        },
    ),
    "yarn, every setting": (
        {
            "scaling": "yarn",
            "factor": 16.0,
            "base": 500000.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 16.0,
            "beta_slow": 2.0,
            "attention_factor": 1.3,
        },
        {
            "rope_type": "yarn",
            "factor": 16.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 16.0,
            "beta_slow": 2.0,
            "attention_factor": 1.3,
            "rope_theta": 500000.0,
        },
    ),
    "yarn, not truncated, DeepSeek's mscale": (
        {
            "scaling": "yarn",
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "truncate": False,
            "mscale": 1.0,
            "mscale_all_dim": 0.8,
        },
        {
            "rope_type": "yarn",
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "truncate": False,
            "mscale": 1.0,
            "mscale_all_dim": 0.8,
            "rope_theta": BASE,
        },
    ),
    "llama3, the defaults": (
        {"scaling": "llama3", "factor": 4.0},
        {
            "rope_type": "llama3",
            "factor": 4.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 2048,
            "rope_theta": BASE,
        },
    ),
    "llama3, Llama 3.1's": (
        {
            "scaling": "llama3",
            "factor": 8.0,
            "base": 500000.0,
            "original_max_position_embeddings": 8192,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
        },
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_theta": 500000.0,
        },
    ),
}


@pytest.mark.parametrize("pairing", PAIRINGS)
@pytest.mark.parametrize("d", [8, 16])
@pytest.mark.parametrize("case", list(CASES))
def test_equals_transformers(case: str, d: int, pairing: str) -> None:
    options, rope_parameters = CASES[case]
    # The stretched context is the original one times the factor, as in a model's config.
    original = rope_parameters.get("original_max_position_embeddings", 2048)
    longest = int(original * rope_parameters.get("factor", 1))
    check_against_transformers(
        options, rope_parameters, d=d, max_position_embeddings=longest, pairing=pairing
    )


@pytest.mark.parametrize("pairing", PAIRINGS)
@pytest.mark.parametrize(("n", "scaled"), [(6, False), (9, True)])
def test_dynamic_equals_transformers_and_leaves_short_texts_alone(
    n: int, scaled: bool, pairing: str
) -> None:
    """transformers' dynamic NTK takes L from max_position_embeddings and the text's length."""
    got = check_against_transformers(
        {"scaling": "dynamic", "factor": 4.0, "original_max_position_embeddings": 6},
        {"rope_type": "dynamic", "factor": 4.0, "rope_theta": BASE},
        n=n,
        max_position_embeddings=6,
        pairing=pairing,
    )
    angles = got.stage("angles").tensors
    assert torch.equal(angles["theta"], angles["unscaled"]) is not scaled


@pytest.mark.parametrize("pairing", PAIRINGS)
def test_ntk_is_transformers_dynamic_where_their_bases_agree(pairing: str) -> None:
    """base·s^(d/(d−2)) = base·(s·n/L − (s − 1))^(d/(d−2)) when n = L(2s − 1)/s: s = 4, L = 4,
    n = 7."""
    check_against_transformers(
        {"scaling": "ntk", "factor": 4.0},
        {"rope_type": "dynamic", "factor": 4.0, "rope_theta": BASE},
        n=7,
        max_position_embeddings=4,
        pairing=pairing,
    )


@pytest.mark.parametrize("d", [8, 16, 64])
def test_the_papers_ramp_is_llama3s_smoothing_with_the_betas_as_bounds(d: int) -> None:
    """ramp=turns: γ = clamp((r − β_slow)/(β_fast − β_slow)), llama3's smooth factor with
    low_freq_factor = β_slow and high_freq_factor = β_fast; the attention factor is yarn's."""
    got = run_variant(
        "rope",
        inputs=tokens(3),
        d_out=d,
        options={"scaling": "yarn", "factor": 4.0, "ramp": "turns", "beta_slow": 1.5},
    )
    inv_freq, _, _, _ = hf_rotary(
        d,
        {
            "rope_type": "llama3",
            "factor": 4.0,
            "low_freq_factor": 1.5,
            "high_freq_factor": 32.0,
            "original_max_position_embeddings": 2048,
            "rope_theta": BASE,
        },
        3,
        8192,
    )
    angles = got.stage("angles").tensors
    torch.testing.assert_close(angles["theta"], inv_freq, rtol=2e-6, atol=0)
    assert float(angles["temperature"]) == pytest.approx(0.1 * math.log(4.0) + 1)


def test_the_issues_example() -> None:
    """d = 8, factor 4: γ = [1, 1, 0.5, 0] and θ₂ = 0.00625, where the paper's printed ramp
    gives 0.0729 for pair 2 (r = 2048·0.01/2π)."""
    inv_freq, _, _, _ = hf_rotary(
        8,
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 2048,
            "rope_theta": BASE,
        },
        1,
        8192,
    )
    index = run_variant("rope", d_out=8, scaling="yarn", factor=4.0).stage("angles").tensors
    assert index["ramp"].tolist() == [1.0, 1.0, 0.5, 0.0]
    torch.testing.assert_close(index["theta"], inv_freq)
    assert float(index["theta"][2]) == pytest.approx(0.00625)
    turns = (
        run_variant("rope", d_out=8, scaling="yarn", factor=4.0, ramp="turns")
        .stage("angles")
        .tensors
    )
    r = 2048 * 0.01 / (2 * math.pi)
    assert float(turns["ramp"][2]) == pytest.approx((r - 1) / 31, rel=1e-6)


# --- rope_scaling: a model's configuration, read as transformers reads it ---


def saved_config(folder: Path, **fields: Any) -> Path:
    """A config.json written by transformers' own save_pretrained."""
    LlamaConfig(hidden_size=32, num_attention_heads=4, **fields).save_pretrained(folder)
    return folder / "config.json"


@pytest.mark.parametrize(
    "fields",
    [
        {
            "max_position_embeddings": 131072,
            "rope_parameters": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
                "rope_theta": 500000.0,
            },
        },
        {
            "max_position_embeddings": 16384,
            "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1000000.0},
        },
        {"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default"}},
        {
            "max_position_embeddings": 4,
            "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 500.0},
        },
    ],
    ids=["llama3", "yarn", "default", "dynamic"],
)
def test_a_saved_config_gives_what_transformers_computes_from_it(
    tmp_path: Path, fields: dict[str, Any]
) -> None:
    path = saved_config(tmp_path, **fields)
    config = AutoConfig.from_pretrained(tmp_path)
    rotary = LlamaRotaryEmbedding(config)
    n = 6
    rotary(torch.zeros(1, n, 8), torch.arange(n)[None])
    got = run_variant("rope", inputs=tokens(n), d_out=8, rope_scaling=str(path))
    angles = got.stage("angles").tensors
    torch.testing.assert_close(angles["theta"], rotary.inv_freq, rtol=2e-6, atol=0)
    temperature = float(angles["temperature"]) if "temperature" in angles else 1.0
    assert temperature == pytest.approx(float(rotary.attention_scaling))


def test_an_older_config_with_rope_scaling_and_type(tmp_path: Path) -> None:
    """transformers 4's spelling: rope_scaling with 'type', rope_theta beside it."""
    path = tmp_path / "config.json"
    scaling = {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0}
    scaling |= {"mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}
    path.write_text(
        json.dumps(
            {"model_type": "deepseek_v3", "max_position_embeddings": 163840}
            | {"rope_theta": 10000, "rope_scaling": scaling},
            indent=2,
        )
    )
    inv_freq, attention, _, _ = hf_rotary(
        8, {"rope_type": "yarn", **scaling, "rope_theta": BASE}, 1, 163840
    )
    got = run_variant("rope", d_out=8, rope_scaling=str(path)).stage("angles").tensors
    torch.testing.assert_close(got["theta"], inv_freq, rtol=2e-6, atol=0)
    assert float(got["temperature"]) == pytest.approx(attention) == 1.0


def test_an_inline_mapping_equals_the_options() -> None:
    inline = run_variant(
        "rope", d_out=8, rope_scaling="{rope_type: yarn, factor: 8, beta_fast: 16}"
    )
    spelled = run_variant("rope", d_out=8, scaling="yarn", factor=8.0, beta_fast=16.0)
    for name in ("theta", "ramp", "temperature"):
        assert torch.equal(
            inline.stage("angles").tensors[name], spelled.stage("angles").tensors[name]
        )


BAD_FILES = {
    # text, (line, column) of the problem, words of the message
    "factor": (
        '{\n  "rope_scaling": {\n    "type": "yarn",\n    "factor": "forty"\n  },\n'
        '  "model_type": "llama"\n}\n',
        (4, 15),
        "factor must be a number",
    ),
    "type": (
        "rope_type: longrope\nfactor: 4\n",
        (1, 12),
        "rope_type 'longrope' is not one rope computes",
    ),
    "key": (
        "rope_type: linear\nfactor: 4\nbeta_fast: 32\n",
        (3, 1),
        "'beta_fast' is not a key of linear",
    ),
    "twice": ("rope_type: linear\nfactor: 4\nfactor: 8\n", (3, 1), "'factor' is given twice"),
    "missing": ("rope_type: llama3\nfactor: 8\n", (1, 1), "llama3 needs 'low_freq_factor'"),
    "bound": ("rope_type: linear\nfactor: 0.5\n", (2, 9), "factor must be at least 1"),
    "control": ('rope_type: linear\nfactor: 2\nx: "\x1b"\n', (3, 5), "control character U+001B"),
    "syntax": ('{"rope_type": "yarn",, }\n', (1, 22), "not valid JSON or YAML"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_mapping_is_one_error_at_its_line_and_column(tmp_path: Path, case: str) -> None:
    text, (line, column), words = BAD_FILES[case]
    path = tmp_path / "scaling.yaml"
    path.write_text(text)
    with pytest.raises(TracerError) as caught:
        run_variant("rope", d_out=8, rope_scaling=str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}:{column}: "), message
    assert words in message and "\n" not in message
    assert caught.value.exit_status == 2


def test_an_option_that_disagrees_with_the_mapping_is_an_error() -> None:
    with pytest.raises(TracerError, match=r"-o factor=3 disagrees with .*factor 8"):
        run_variant("rope", d_out=8, factor=3.0, rope_scaling="{rope_type: linear, factor: 8}")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"scaling": "linear", "beta_fast": 16.0}, "-o beta_fast applies to -o scaling=yarn"),
        ({"scaling": "yarn", "beta_fast": 1.0, "beta_slow": 2.0}, "must be above"),
        ({"scaling": "llama3", "low_freq_factor": 4.0}, "must be above"),
        ({"rope_scaling": "no/such/config.json"}, "not found"),
    ],
)
def test_settings_that_cannot_work_are_one_line(options: dict[str, Any], words: str) -> None:
    with pytest.raises(TracerError) as caught:
        run_variant("rope", d_out=8, options=options)
    assert words in str(caught.value) and "\n" not in str(caught.value)
