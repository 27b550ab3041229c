"""mla against Hugging Face transformers' ``DeepseekV3Attention``, given the same weights.

A tiny ``DeepseekV3Config`` (no rope scaling, interleaved rotary pairs as DeepSeek-V3's
``rope_interleave``) and one attention layer, eager; our weights copied into its
``nn.Linear`` layers (which apply ``x @ W.T``). With DeepSeek's options set (the latent
RMSNorm, low-rank queries, a value width of its own, no output bias) the attention weights
and the output equal transformers'; with the defaults they do not, for the reasons the
variant's documentation gives.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tracer.inputs import InputSet
from tracer.testing import run_variant

transformers = pytest.importorskip("transformers")
from transformers import DeepseekV3Config  # noqa: E402
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (  # noqa: E402
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)

HEADS, HEAD_DIM, RANK, ROPE_DIM = 2, 3, 4, 2
D = HEADS * HEAD_DIM  # d_out, and the inputs' width: DeepSeek's output returns to the model's
DEEPSEEK = {"latent_norm": True, "out_bias": False}


def inputs(n: int = 6, seed: int = 1) -> InputSet:
    rows = torch.randn(n, D, generator=torch.Generator().manual_seed(seed))
    return InputSet(
        name="random",
        tokens=tuple(f"t{i}" for i in range(n)),
        embeddings=tuple(tuple(float(v) for v in row) for row in rows),
    )


def per_head(*blocks: tuple[torch.Tensor, int]) -> torch.Tensor:
    """Columns of each block, head by head: [block 1 of head 0, block 2 of head 0, ...]."""
    columns = []
    for h in range(HEADS):
        columns += [W[:, h * width : (h + 1) * width] for W, width in blocks]
    return torch.cat(columns, dim=1)


def deepseek(q_lora_rank: int | None, v_head_dim: int) -> DeepseekV3Attention:
    config = DeepseekV3Config(
        vocab_size=16,
        hidden_size=D,
        intermediate_size=8,
        moe_intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        n_routed_experts=2,
        n_shared_experts=1,
        num_experts_per_tok=1,
        n_group=1,
        topk_group=1,
        q_lora_rank=q_lora_rank,
        kv_lora_rank=RANK,
        qk_rope_head_dim=ROPE_DIM,
        qk_nope_head_dim=HEAD_DIM,
        v_head_dim=v_head_dim,
        rope_interleave=True,
        attention_bias=False,
        max_position_embeddings=64,
    )
    config._attn_implementation = "eager"
    return DeepseekV3Attention(config, layer_idx=0).eval()


def load(attention: DeepseekV3Attention, W: dict[str, torch.Tensor], v_head_dim: int) -> None:
    """Our x @ W weights into transformers' layers, whose weight is W transposed."""
    with torch.no_grad():
        if "W_dq" in W:
            attention.q_a_proj.weight.copy_(W["W_dq"].T)
            query = per_head((W["W_uq"], HEAD_DIM), (W["W_qr"], ROPE_DIM))
            attention.q_b_proj.weight.copy_(query.T)
        else:
            query = per_head((W["W_query"], HEAD_DIM), (W["W_qr"], ROPE_DIM))
            attention.q_proj.weight.copy_(query.T)
        attention.kv_a_proj_with_mqa.weight.copy_(torch.cat([W["W_dkv"], W["W_kr"]], dim=1).T)
        attention.kv_b_proj.weight.copy_(per_head((W["W_uk"], HEAD_DIM), (W["W_uv"], v_head_dim)).T)
        attention.o_proj.weight.copy_(W["W_out"].T)


def transformers_run(got: Any, q_lora_rank: int | None, v_head_dim: int):  # type: ignore[no-untyped-def]
    attention = deepseek(q_lora_rank, v_head_dim)
    load(attention, got.stage("projections").tensors, v_head_dim)
    x = got.context.inputs[None]
    n = x.shape[1]
    cos, sin = DeepseekV3RotaryEmbedding(attention.config)(x, torch.arange(n)[None])
    mask = torch.full((n, n), float("-inf")).triu(1)[None, None]
    with torch.no_grad():
        output, weights = attention(x, (cos, sin), mask)
    return output[0], weights[0]


@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize(("q_lora_rank", "v_head_dim"), [(0, HEAD_DIM), (3, 5), (5, 2)])
def test_with_deepseeks_options_it_equals_transformers(
    q_lora_rank: int, v_head_dim: int, absorb: bool
) -> None:
    options = {**DEEPSEEK, "heads": HEADS, "rank": RANK, "rope_dim": ROPE_DIM, "absorb": absorb}
    options |= {"q_lora_rank": q_lora_rank, "v_head_dim": v_head_dim}
    got = run_variant("mla", inputs=inputs(), init="randn", d_out=D, options=options)
    want_output, want_weights = transformers_run(got, q_lora_rank or None, v_head_dim)
    torch.testing.assert_close(
        got.stage("weights").tensors["weights"], want_weights, atol=1e-5, rtol=0
    )
    torch.testing.assert_close(got.output, want_output, atol=1e-5, rtol=1e-5)


def test_the_defaults_differ_from_deepseek_where_the_docs_say() -> None:
    """No latent norm and an output bias: turning each on or off moves the output."""
    base = {"heads": HEADS, "rank": RANK, "rope_dim": ROPE_DIM}
    plain = run_variant("mla", inputs=inputs(), init="randn", d_out=D, options=base)
    want, _ = transformers_run(plain, None, HEAD_DIM)
    assert float((plain.output - want).abs().max()) > 1e-2
    bias_only = run_variant(
        "mla", inputs=inputs(), init="randn", d_out=D, options={**base, "latent_norm": True}
    )
    want, _ = transformers_run(bias_only, None, HEAD_DIM)
    b_out = bias_only.stage("projections").tensors["b_out"]
    torch.testing.assert_close(bias_only.output - b_out, want, atol=1e-5, rtol=1e-5)


def test_the_latent_norm_is_an_rms_norm_of_each_tokens_latent() -> None:
    options = {"heads": HEADS, "rank": RANK, "rope_dim": ROPE_DIM, "latent_norm": True}
    got = run_variant("mla", inputs=inputs(), init="randn", d_out=D, options=options)
    latent = got.stage("latent").tensors
    raw = latent["latent_before_norm"]
    want = torch.nn.functional.rms_norm(raw, (RANK,), eps=1e-6)
    torch.testing.assert_close(latent["latent"], want)


def test_the_query_latent_replaces_the_tools_query_projection() -> None:
    options = {"heads": HEADS, "rank": RANK, "rope_dim": ROPE_DIM, "q_lora_rank": 3}
    got = run_variant("mla", inputs=inputs(), init="randn", d_out=D, options=options)
    W = got.stage("projections").tensors
    assert "W_query" not in W and W["W_dq"].shape == (D, 3) and W["W_qr"].shape == (3, 4)
    queries = got.stage("queries").tensors
    torch.testing.assert_close(queries["query_latent"], got.context.inputs @ W["W_dq"])
