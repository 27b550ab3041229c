"""``attn check`` takes the common shapes of learner code beyond the book's.

numpy arrays in and out, wrappers around ``nn.MultiheadAttention`` (either
layout), classes built from one ``config`` object (nanoGPT, Hugging Face) and
the Annotated Transformer's ``attention(query, key, value, mask, dropout)``.
Each file in ``styles/`` is labelled with the options it is checked with.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.check_corpus import NEW_FOLDERS, Case, cases, failing_configuration

Attn = Callable[..., tuple[int, str, str]]
STYLES = Path(__file__).parent / "styles"


def options(name: str) -> list[str]:
    label = next(
        line for line in (STYLES / name).read_text().splitlines() if line.startswith("# expect:")
    )
    return shlex.split(label.removeprefix("# expect:").split("->")[0])


@pytest.mark.parametrize(
    ("name", "called"),
    [
        ("numpy_correct.py", "function attention (numpy)"),
        ("mha_wrapper_batch_first.py", "class CausalMHA(d_model=3, num_heads=3, dropout=0.0)"),
        ("mha_wrapper_seq_first.py", "class SelfAttention(embed_dim=3, n_heads=1)"),
        ("nanogpt_config.py", "class CausalSelfAttention(config="),
        ("annotated_attention.py", "function attention(query, key, value) on the projected"),
    ],
)
def test_common_shapes_pass(attn: Attn, name: str, called: str) -> None:
    status, out, err = attn("check", str(STYLES / name), *options(name), "--json")
    assert status == 0, out + err
    report = json.loads(out)
    assert report["matches"] is True and report["called"].startswith(called)
    # Stages computed inside numpy or torch's own modules are "another route", never "differs".
    assert all(stage["status"] != "differs" for stage in report["stages"])


def test_a_numpy_function_gets_arrays(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "kinds.py"
    path.write_text(
        "import numpy as np\n\n\ndef attention(inputs):\n"
        "    assert isinstance(inputs, np.ndarray), type(inputs)\n"
        "    w = np.exp(inputs @ inputs.T)\n"
        "    return (w / w.sum(axis=1, keepdims=True)) @ inputs\n"
    )
    status, out, err = attn("check", str(path), "--against", "vectorized")
    assert status == 0, out + err


def test_a_config_attribute_it_lacks_is_named(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "vocab_config.py"
    path.write_text(
        "from torch import nn\n\n\nclass Attention(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n"
        "        self.size = config.vocab_size\n"
    )
    status, _, err = attn(
        "check", str(path), "--against", "multihead", "--d-out", "3", "--heads", "1"
    )
    assert status == 2
    assert "the config attn check builds has no 'vocab_size'; it has" in err
    assert err.startswith(f"{path}:7: ") and "n_embd" in err and len(err.splitlines()) == 1


def test_a_config_class_needs_one_width(attn: Attn) -> None:
    status, _, err = attn("check", str(STYLES / "nanogpt_config.py"), "--against", "multihead")
    assert status == 2
    assert err.endswith("the variant's d_out is 2; run with --d-out 3\n")


def test_projected_tensors_need_a_single_head_variant(attn: Attn) -> None:
    path = STYLES / "annotated_attention.py"
    status, _, err = attn("check", str(path), "--against", "multihead")
    assert status == 2
    assert err == (
        f"{path}:8: attention(query, key, value, ...) takes tensors already projected; attn "
        "check can call it against a single-head variant with weights (trainable, masked, "
        "sliding-window), not this one\n"
    )


STYLED = cases(NEW_FOLDERS)


def test_the_new_styles_are_there() -> None:
    assert len(STYLED) >= 25
    assert sum(case.code is not None for case in STYLED) >= 15


@pytest.mark.parametrize("case", STYLED, ids=lambda c: c.path.name)
def test_labelled_style(attn: Attn, case: Case) -> None:
    """Each file gets its labelled verdict, mistake and line (or the next), by value."""
    status, out, err = attn("check", str(case.path), *case.options, "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    if case.code is None:
        assert status == 0, out + err
        return
    assert status == 1, out + err
    report = failing_configuration(report)
    first = report["diagnoses"][0]
    assert first["code"] == case.code
    assert case.line is not None and first["line"] in (case.line, case.line + 1)


@pytest.mark.parametrize(
    ("name", "options", "code", "why"),
    [
        ("online_no_rescale.py", (), "no-rescale", "running maximum grows"),
        ("gqa_repeat.py", ("--heads", "2"), "heads-tiled", "tiling and interleaving"),
        ("sliding_off_by_one.py", ("-o", "window=8"), "window-off-by-one", "covers the whole"),
        ("nanogpt_functional_dropout.py", ("--d-out", "3", "--heads", "1"), "dropout-on", "eval"),
    ],
)
def test_what_the_defaults_hide_is_checked_again(
    attn: Attn, name: str, options: tuple[str, ...], code: str, why: str
) -> None:
    variant = options_of(name)[1]
    status, out, err = attn("check", str(STYLES / name), "--against", variant, *options, "--json")
    assert status == 1, out + err
    report = json.loads(out)
    assert report["matches"] is False
    again = failing_configuration(report)
    assert again is not report and again["diagnoses"][0]["code"] == code
    status, text, _ = attn("check", str(STYLES / name), "--against", variant, *options)
    assert status == 1 and text.startswith("(your output matches with these options, but ")
    assert why in text.split("\n\n")[0]


def options_of(name: str) -> list[str]:
    return options(name)
