"""Independent answers to the live quizzes of lesson 19 (a real model): the shipped model run
by Hugging Face transformers itself, its weights read from ``output_attentions``, never by
running the variant."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import torch

SHIPPED = Path(__file__).resolve().parents[2] / "plugins" / "letters_model"
TEXT = "R J O S B I M L N G R J O S B I M L N G"


@functools.cache
def attentions() -> tuple[torch.Tensor, ...]:
    """Every layer's weights (heads, query, key) of the shipped model on the lesson's text."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(SHIPPED)
    model = transformers.AutoModelForCausalLM.from_pretrained(SHIPPED, attn_implementation="eager")
    model.eval()
    ids = torch.tensor([tokenizer(TEXT)["input_ids"]])
    with torch.no_grad():
        found = model(input_ids=ids, output_attentions=True).attentions
    return tuple(layer[0] for layer in found)


def previous_token_best() -> float:
    weights = attentions()[0]
    n = weights.shape[-1]
    return max(
        sum(float(weights[h, i, i - 1]) for i in range(1, n)) / (n - 1)
        for h in range(weights.shape[0])
    )


MODEL_ORACLES: dict[tuple[str, str], Callable[[], float]] = {
    ("19_real_model", "previous-head"): previous_token_best,
    ("19_real_model", "previous-weight-14"): lambda: float(attentions()[0][0, 14, 13]),
    ("19_real_model", "induction-look-14"): lambda: float(attentions()[1][0, 14].argmax()),
}
