"""Oracles for lesson 12 (cross-attention), from torch's own scaled_dot_product_attention.

The lesson's inline inputs are read with plain ``yaml.safe_load``; the weights are drawn
as the tracer documents it: ``torch.manual_seed(123)``, then ``torch.rand`` for W_query,
W_key and W_value of the target (3 × 2 each), then for the source's W_key and W_value
(4 × 2 each).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml

LESSON = Path(__file__).parents[2] / "lessons" / "12_cross_attention.yaml"


def lesson_inputs() -> tuple[list[str], torch.Tensor, list[str], torch.Tensor]:
    inputs = yaml.safe_load(LESSON.read_text(encoding="utf-8"))["inputs"]
    source = inputs["source"]
    return (
        inputs["tokens"],
        torch.tensor(inputs["embeddings"]),
        source["tokens"],
        torch.tensor(source["embeddings"]),
    )


def attention() -> tuple[torch.Tensor, torch.Tensor]:
    """(weights, context) of cross-attention on the lesson's inputs."""
    _, x, _, s = lesson_inputs()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        w_q = torch.rand(x.shape[1], 2)
        torch.rand(x.shape[1], 2), torch.rand(x.shape[1], 2)  # the target's own W_key, W_value
        w_k, w_v = torch.rand(s.shape[1], 2), torch.rand(s.shape[1], 2)
    q, k, v = x @ w_q, s @ w_k, s @ w_v
    weights = torch.softmax(q @ k.T / 2**0.5, dim=-1)
    return weights, F.scaled_dot_product_attention(q, k, v)


def cell(name: str, row: str, column: str | int) -> float:
    target, _, source, _ = lesson_inputs()
    weights, context = attention()
    if name == "weights":
        return float(weights[target.index(row), source.index(str(column))])
    return float(context[target.index(row), int(column)])


CROSS_ORACLES: dict[tuple[str, str], Callable[[], float | str]] = {
    ("12_cross_attention", "weights-shape"): lambda: " × ".join(
        str(n) for n in attention()[0].shape
    ),
    ("12_cross_attention", "chat-sleeping"): lambda: cell("weights", "chat", "sleeping"),
    ("12_cross_attention", "context-dort"): lambda: cell("context", "dort", 0),
}
