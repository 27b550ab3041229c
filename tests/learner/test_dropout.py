"""Dropout on: the learner's mask is torch's, the reference's numpy's, so structure is checked.

The oracle for "what dropout does" is torch's own ``F.dropout``: every entry
is 0 or x / (1 - p). The labelled files in ``realistic/dropout_*.py`` cover
each named mistake; here are the pieces and the command's reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from tracer.learner.judging.dropout_check import SCALED, UNSCALED, dropped_from

Attn = Callable[..., tuple[int, str, str]]
REALISTIC = Path(__file__).parent / "realistic"
BOOK = REALISTIC / "book_causal_dropout.py"


def weights() -> torch.Tensor:
    torch.manual_seed(0)
    scores = torch.randn(6, 6).masked_fill(
        torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), -torch.inf
    )
    return torch.softmax(scores, dim=-1)


def test_torch_dropout_has_the_structure() -> None:
    w = weights()
    torch.manual_seed(1)
    assert dropped_from(F.dropout(w, p=0.5), w, 0.5) == SCALED


def test_a_mask_without_rescaling_is_told_apart() -> None:
    w = weights()
    torch.manual_seed(1)
    keep = (torch.rand_like(w) >= 0.5).float()
    assert dropped_from(w * keep, w, 0.5) == UNSCALED


def test_nothing_dropped_or_everything_dropped_is_no_dropout() -> None:
    w = weights()
    assert dropped_from(w, w, 0.5) is None
    assert dropped_from(torch.zeros_like(w), w, 0.5) is None


def test_another_rate_is_not_this_rate() -> None:
    w = weights()
    torch.manual_seed(1)
    assert dropped_from(F.dropout(w, p=0.2), w, 0.5) is None


def test_the_book_class_passes_with_dropout_on(attn: Attn) -> None:
    status, out, err = attn("check", str(BOOK), "--against", "masked", "--dropout", "0.5", "--json")
    assert status == 0, out + err
    report = json.loads(out)
    assert report["matches"] is True
    stages = {s["name"]: s for s in report["stages"]}
    assert stages["weights"]["status"] == "match"
    assert stages["dropout"]["status"] == "own mask" and stages["dropout"]["line"] == 20
    assert stages["context"]["status"] == "own mask" and stages["context"]["line"] == 21
    assert report["dropout"] == {"p": 0.5, "verified": True, "note": None}


def test_the_text_report_says_the_values_after_dropout_are_not_compared(attn: Attn) -> None:
    status, out, _ = attn("check", str(BOOK), "--against", "masked", "--dropout", "0.5")
    assert status == 0
    assert "your own mask" in out and "not compared one to one" in " ".join(out.split())


def test_a_pass_with_dropout_off_is_checked_again_with_it_on(attn: Attn) -> None:
    status, out, _ = attn("check", str(BOOK), "--against", "masked", "--json")
    assert status == 0
    report = json.loads(out)
    assert report["with_dropout"]["dropout"]["p"] == 0.5
    assert report["with_dropout"]["matches"] is True
    status, out, _ = attn("check", str(BOOK), "--against", "masked")
    assert "checked again with --dropout 0.5" in out


def test_the_report_says_which_configuration_found_the_mistake(attn: Attn) -> None:
    path = REALISTIC / "dropout_never_applied.py"
    status, out, err = attn("check", str(path), "--against", "masked")
    assert status == 1 and "Traceback" not in err
    assert "with --dropout 0 your output matches" in out
    assert "checked again with --dropout 0.5" in out
    assert "[dropout-ignored]" in out and "dropout_never_applied.py:19" in out
    assert "expected dropout" not in out  # the reference's mask is not the learner's to match


def test_a_function_without_a_rate_is_not_asked_to_drop(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_text(
        "import torch\n"
        "def attention(inputs, W_query, W_key, W_value):\n"
        "    q, k, v = inputs @ W_query, inputs @ W_key, inputs @ W_value\n"
        "    n = inputs.shape[0]\n"
        "    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)\n"
        "    s = (q @ k.T / k.shape[-1] ** 0.5).masked_fill(mask, -torch.inf)\n"
        "    return torch.softmax(s, dim=-1) @ v\n",
        encoding="utf-8",
    )
    status, out, _ = attn("check", str(path), "--against", "masked", "--json")
    assert status == 0
    assert "with_dropout" not in json.loads(out)
    # Asked for dropout explicitly, it is told the function takes no rate.
    status, out, _ = attn("check", str(path), "--against", "masked", "--dropout", "0.5", "--json")
    assert status == 1
    (diagnosis,) = json.loads(out)["diagnoses"]
    assert (
        diagnosis["code"] == "dropout-ignored" and "takes no dropout rate" in diagnosis["message"]
    )


def test_the_multihead_book_class_passes_with_dropout_on(attn: Attn) -> None:
    path = REALISTIC / "book_multihead.py"
    options = ("--against", "multihead", "--d-out", "4", "--init", "linear", "--dropout", "0.5")
    status, out, err = attn("check", str(path), *options, "--json")
    assert status == 0, out + err
    report = json.loads(out)
    assert report["dropout"]["verified"] is True
    stages = {s["name"]: s["status"] for s in report["stages"]}
    assert stages["dropout"] == "own mask" and stages["head_context"] == "own mask"
    # After the heads' context the masks' difference runs on: those stages are not compared.
    assert stages["concat"] == "not compared" and stages["context"] == "not compared"
    # ...so they are compared value by value with dropout off.
    assert report["without_dropout"]["matches"] is True and report["matches"] is True


def test_stages_after_the_context_are_compared_with_dropout_off(attn: Attn, tmp_path: Path) -> None:
    # Right dropout, wrong merge of the heads: dropout on cannot see the merge (the masks
    # differ from there on), so the command compares those stages with dropout off.
    path = tmp_path / "merge.py"
    path.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def attention(inputs, W_query, W_key, W_value, W_out, b_out, num_heads, dropout=0.0):\n"
        "    n, d_out = inputs.shape[0], W_query.shape[1]\n"
        "    h = d_out // num_heads\n"
        "    q = (inputs @ W_query).view(n, num_heads, h).transpose(0, 1)\n"
        "    k = (inputs @ W_key).view(n, num_heads, h).transpose(0, 1)\n"
        "    v = (inputs @ W_value).view(n, num_heads, h).transpose(0, 1)\n"
        "    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)\n"
        "    s = (q @ k.transpose(-2, -1) / h**0.5).masked_fill(causal, -torch.inf)\n"
        "    w = F.dropout(torch.softmax(s, dim=-1), p=dropout)\n"
        "    merged = (w @ v).reshape(n, d_out)\n"
        "    return merged @ W_out + b_out\n",
        encoding="utf-8",
    )
    options = ("--against", "multihead", "--d-out", "4", "--dropout", "0.5")
    status, out, _ = attn("check", str(path), *options, "--json")
    assert status == 1
    report = json.loads(out)
    assert report["dropout"]["verified"] is True  # the dropout itself is right
    assert report["matches"] is False
    (diagnosis,) = report["without_dropout"]["diagnoses"]
    assert diagnosis["code"] == "head-merge" and diagnosis["line"] == 12
    status, out, _ = attn("check", str(path), *options)
    assert status == 1 and "checked again with --dropout 0)" in out and "[head-merge]" in out


def test_a_dropout_that_cannot_be_found_is_not_judged(attn: Attn, tmp_path: Path) -> None:
    # Dropout on the values: nothing the structure check knows. It says so, and neither
    # blames a line nor claims the dropout is right.
    path = tmp_path / "values.py"
    text = (REALISTIC / "book_causal_dropout.py").read_text(encoding="utf-8")
    text = text.replace(
        "weights = self.dropout(weights)\n        return weights @ v",
        "return weights @ self.dropout(v)",
    )
    assert "self.dropout(v)" in text
    path.write_text(text, encoding="utf-8")
    status, out, _ = attn("check", str(path), "--against", "masked", "--json")
    assert status == 0  # right with dropout off, which is all that could be established
    extra = json.loads(out)["with_dropout"]
    assert extra["dropout"]["verified"] is False and extra["diagnoses"] == []
    assert "scaled by 1/(1-p)" in extra["dropout"]["note"]
    status, out, _ = attn("check", str(path), "--against", "masked")
    assert "with --dropout 0.5 your dropout could not be checked" in out
    assert "Well done" in out
