"""The induction model's forward pass, written independently of the plugin: numpy, float64,
one head at a time, from the shipped weights file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

WEIGHTS = Path(__file__).resolve().parents[2] / "plugins" / "induction_weights.pt"
LETTERS = "ABCDEFGHIJKLMNOPQRST"
DEFAULT = "RJOSBIMLNG" * 2
"""The variant's default inputs: ten letters, then the same ten again."""


def numpy_forward(letters: str) -> dict[str, Any]:
    """The model, one head at a time in float64 numpy: per-head weights and outputs, logits."""
    model = {name: t.double().numpy() for name, t in torch.load(WEIGHTS, weights_only=True).items()}
    ids = [LETTERS.index(c) for c in letters]
    n = len(ids)
    x = model["W_E"][ids] + model["W_pos"][:n]
    found: dict[str, Any] = {"embed": x.copy()}
    for layer in range(2):
        weights, outputs = [], []
        for h in range(model[f"{layer}.W_Q"].shape[0]):
            q = x @ model[f"{layer}.W_Q"][h]
            k = x @ model[f"{layer}.W_K"][h]
            v = x @ model[f"{layer}.W_V"][h]
            scores = q @ k.T / np.sqrt(k.shape[1])
            scores[np.triu_indices(n, 1)] = -np.inf
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            w = e / e.sum(axis=1, keepdims=True)
            weights.append(w)
            outputs.append(w @ v @ model[f"{layer}.W_O"][h])
        x = x + sum(outputs)
        found[f"layer{layer}_weights"] = np.stack(weights)
        found[f"layer{layer}_outputs"] = np.stack(outputs)
        found[f"layer{layer}_residual"] = x.copy()
    found["logits"] = x @ model["W_U"]
    return found
