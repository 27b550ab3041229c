"""``attn check`` takes code in the shapes learners write: classes, batches, einsum, tuples.

Every file in ``shapes/`` is a correct implementation written the way a
learner following the book's chapter 3 (or nanoGPT) would; each must pass
against its variant, with no stage marked as differing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

Attn = Callable[..., tuple[int, str, str]]
SHAPES = Path(__file__).parent / "shapes"

CORRECT = [
    ("class_parameters.py", "trainable", (), "class SelfAttentionParams(d_in=3, d_out=2)"),
    (
        "class_linear.py",
        "trainable",
        ("--init", "randn", "--d-out", "4"),
        "class SelfAttentionLinear(d_in=3, d_out=4, qkv_bias=False)",
    ),
    (
        "class_causal_batched.py",
        "masked",
        (),
        "class CausalSelfAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, qkv_bias=False)",
    ),
    (
        "class_wrapper.py",
        "multihead-wrapper",
        ("--heads", "3"),
        "class HeadsWrapper(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=3, "
        "qkv_bias=False)",
    ),
    (
        "class_multihead.py",
        "multihead",
        ("--d-out", "4", "--init", "linear"),
        "class MultiHead(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2, "
        "qkv_bias=False)",
    ),
    (
        "fused_qkv.py",
        "multihead",
        ("--d-out", "4"),
        "class FusedAttention(d_in=3, d_out=4, num_heads=2, context_length=6, dropout=0.0)",
    ),
    ("einsum_batched.py", "trainable", (), "function attention"),
    ("module_instance.py", "trainable", (), "the module attention"),
    ("tuple_return.py", "trainable", (), "function attention"),
]


@pytest.mark.parametrize(("name", "variant", "options", "called"), CORRECT)
def test_learners_shapes_pass(
    attn: Attn, name: str, variant: str, options: tuple[str, ...], called: str
) -> None:
    status, out, err = attn("check", str(SHAPES / name), "--against", variant, *options, "--json")
    assert status == 0, out + err
    report = json.loads(out)
    assert report["matches"] is True and report["called"] == called
    assert all(stage["status"] != "differs" for stage in report["stages"]), report["stages"]
    assert report["output"] == ""  # a failed first try (with or without a batch) leaves no trace


def test_a_class_is_named_when_it_stands_in_for_attention(attn: Attn) -> None:
    status, out, _ = attn("check", str(SHAPES / "class_causal_batched.py"), "--against", "masked")
    assert status == 0
    assert out.splitlines()[1] == (
        "  (no 'attention' in the file, so it checks class CausalSelfAttention(d_in=3, d_out=2, "
        "context_length=6, dropout=0.0, qkv_bias=False))"
    )


def test_batched_stages_name_the_learners_lines(attn: Attn) -> None:
    """The batch of one is stripped, so every stage is found at the learner's own line."""
    _, out, _ = attn(
        "check", str(SHAPES / "class_causal_batched.py"), "--against", "masked", "--json"
    )
    lines = {s["name"]: s["line"] for s in json.loads(out)["stages"] if s["status"] == "match"}
    assert lines["queries"] == 18 and lines["scores"] == 21 and lines["context"] == 25


def test_returned_weights_are_checked(attn: Attn) -> None:
    status, out, _ = attn("check", str(SHAPES / "tuple_wrong_weights.py"), "--against", "trainable")
    assert status == 1
    assert out.rstrip().endswith(
        "result: the attention weights your function returns (second value) differ from the "
        "'weights' stage"
    )


def test_a_class_that_needs_what_the_tool_cannot_give(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "vocab.py"
    path.write_text(
        "from torch import nn\n\n\nclass Attention(nn.Module):\n"
        "    def __init__(self, vocabulary):\n        super().__init__()\n"
    )
    status, _, err = attn("check", str(path), "--against", "trainable")
    assert status == 2
    assert err == (
        f"{path}:4: Attention.__init__ needs 'vocabulary', which attn check cannot supply; it "
        "builds classes as (d_in, d_out[, context_length, dropout[, num_heads]], qkv_bias=False) "
        "or from one `config`\n"
    )


def test_weights_with_names_it_cannot_place(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "names.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Attention(nn.Module):\n"
        "    def __init__(self, d_in, d_out):\n        super().__init__()\n"
        "        self.first = nn.Linear(d_in, d_out)\n\n"
        "    def forward(self, x):\n        return self.first(x)\n"
    )
    status, _, err = attn("check", str(path), "--against", "trainable")
    assert status == 2
    assert err == (
        f"{path}: cannot tell which weights Attention.first.weight holds; name the "
        "projections W_query, W_key, W_value (and out_proj) as the book does\n"
    )
