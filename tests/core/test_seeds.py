"""Every tensor printed in the seeds comes out of our variants, through the API and the CLI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tests.data import seeds
from tracer.inputs.builtin import FOUR_WORDS, YOUR_JOURNEY
from tracer.plugin_host import PluginHost
from tracer.tracing.runner import TraceOptions, start_trace


def close(actual: Any, expected: Any) -> None:
    """Equal as printed: to 4 decimals."""
    np.testing.assert_allclose(np.asarray(actual, dtype=float), expected, atol=5e-5, rtol=0)


def tensors(variant: str, host: PluginHost, **options: Any) -> dict[str, Any]:
    trace = start_trace(variant, TraceOptions(**options), host).run_to_end()
    found = {f"{s.name}.{name}": t for s in trace.stages for name, t in s.tensors.items()}
    found["output"] = trace.output
    return found


# (variant, options, "stage.tensor", expected, the seed it comes from)
CASES = [
    ("trainable", {}, "weights.weights", seeds.SEED_000_ATTN_WEIGHTS, "000"),
    ("trainable", {}, "context.context", seeds.SEED_000_CONTEXT_VECTORS, "000"),
    ("trainable", {}, "output", seeds.SEED_000_CONTEXT_VECTORS, "000"),
    ("trainable", {"query": 1}, "queries.queries", seeds.SEED_001_QUERY_2, "001"),
    ("naive-loop", {"query": 1}, "scores.scores", seeds.SEED_001_SCORES_2, "001"),
    ("naive-loop", {"query": 1}, "weights.sum_normalized", seeds.SEED_001_SUM_WEIGHTS_2, "001"),
    ("naive-loop", {"query": 1}, "weights.weights", seeds.SEED_001_SOFTMAX_WEIGHTS_2, "001"),
    ("naive-loop", {"query": 1}, "context.context", seeds.SEED_001_CONTEXT_2, "001"),
    ("naive-loop", {}, "scores.scores", seeds.SIMPLE_SCORES, "001"),
    ("naive-loop", {}, "weights.weights", seeds.SIMPLE_WEIGHTS, "001"),
    ("naive-loop", {}, "context.context", seeds.SIMPLE_CONTEXT, "001"),
    ("vectorized", {}, "inputs.inputs", seeds.SEED_003_INPUTS, "003"),
    ("vectorized", {}, "scores.scores", seeds.SIMPLE_SCORES, "001/003"),
    ("vectorized", {}, "weights.weights", seeds.SIMPLE_WEIGHTS, "001/003"),
    ("vectorized", {}, "context.context", seeds.SIMPLE_CONTEXT, "001/003"),
    ("vectorized", {"query": 1}, "scores.scores", seeds.SEED_001_SCORES_2, "001"),
    ("vectorized", {"query": 1}, "context.context", seeds.SEED_001_CONTEXT_2, "001"),
]


@pytest.mark.parametrize(("variant", "options", "key", "expected", "seed"), CASES)
def test_api_reproduces_seed(
    host: PluginHost, variant: str, options: dict[str, Any], key: str, expected: Any, seed: str
) -> None:
    close(tensors(variant, host, **options)[key], expected)


@pytest.mark.parametrize(("variant", "options", "key", "expected", "seed"), CASES)
def test_cli_json_reproduces_seed(
    attn_json: Callable[..., Any],
    variant: str,
    options: dict[str, Any],
    key: str,
    expected: Any,
    seed: str,
) -> None:
    argv = [variant] + [f"--{name.replace('_', '-')}={value}" for name, value in options.items()]
    document = attn_json("trace", *argv)
    if key == "output":
        close(document["output"], expected)
        return
    stage_name, tensor_name = key.split(".")
    (stage,) = [s for s in document["stages"] if s["name"] == stage_name]
    close(stage["tensors"][tensor_name], expected)


def test_seed_003_single_dot_product(host: PluginHost) -> None:
    # torch.dot(inputs[0], inputs[1]) is the naive loop's first sub-step for query 0, key 1.
    trace = start_trace("naive-loop", TraceOptions(query=0), host)
    steps = [step for step, _ in zip(trace, range(3), strict=False)]
    assert steps[2].position == (0, 1)
    close(steps[2].tensors["score"], seeds.SEED_003_DOT_0_1)


def test_seed_003_buggy_loop_gives_the_diagonal(host: PluginHost) -> None:
    """Seed 003's loop dots each token with itself: the symptom is the diagonal of the scores."""
    scores = tensors("naive-loop", host)["scores.scores"]
    close(torch.diagonal(scores), seeds.SEED_003_SELF_DOTS)


def test_seed_002_query_walk_matches_its_code(host: PluginHost) -> None:
    """Seed 002 prints no numbers, so its own code (randn under seed 123) is the oracle."""
    inputs = torch.tensor(YOUR_JOURNEY.embeddings)
    torch.manual_seed(123)
    w_query, w_key, w_value = (torch.randn(3, 2) for _ in range(3))
    query_2 = inputs[1] @ w_query
    keys, values = inputs @ w_key, inputs @ w_value
    found = tensors("trainable", host, init="randn", query=1)
    close(found["queries.queries"], query_2)
    close(found["scores.scores"], query_2 @ keys.T)
    close(found["weights.weights"], torch.softmax(query_2 @ keys.T / 2**0.5, dim=0))
    close(found["output"], torch.softmax(query_2 @ keys.T / 2**0.5, dim=0) @ values)
    # Its mistake: softmax over the single score attn_scores_22 is 1, whatever the comment says.
    assert torch.softmax(query_2.dot(keys[1]) / 2**0.5, dim=0).item() == 1.0


def test_seed_004_integer_weights_are_numpys_draws() -> None:
    rng = np.random.RandomState(42)
    drawn = [rng.randint(3, size=(3, 3)).tolist() for _ in range(3)]
    assert drawn == [seeds.SEED_004_W_Q, seeds.SEED_004_W_K, seeds.SEED_004_W_V]
    assert FOUR_WORDS.weights is not None
    assert [list(map(list, FOUR_WORDS.weights[n])) for n in ("query", "key", "value")] == drawn
    assert [list(row) for row in FOUR_WORDS.embeddings] == seeds.SEED_004_WORDS


def test_seed_004_attention_matches_its_numpy_code(host: PluginHost) -> None:
    words = np.array(seeds.SEED_004_WORDS, dtype=float)
    q = words @ np.array(seeds.SEED_004_W_Q)
    k = words @ np.array(seeds.SEED_004_W_K)
    v = words @ np.array(seeds.SEED_004_W_V)
    scores = q @ k.T / k.shape[1] ** 0.5
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)  # scipy's softmax(axis=1)
    found = tensors("trainable", host, inputs="four-words")
    close(found["weights.weights"], weights)
    close(found["output"], weights @ v)
