"""Random inputs with explicit weights, and a one-line way to run a variant on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from tracer.inputs import InputSet
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

HOST = PluginHost(use_env=False)

# Small enough that float32 rounding stays far below the tolerance of the float64 references.
values = st.floats(min_value=-1.5, max_value=1.5, allow_nan=False, width=32)


@dataclass(frozen=True)
class Problem:
    input_set: InputSet
    x: np.ndarray
    """Embeddings, (tokens, d_in), float64 for the numpy references."""
    w: dict[str, np.ndarray]
    """query, key, value: (d_in, d_out), float64."""


@st.composite
def problems(
    draw: st.DrawFn, max_tokens: int = 9, d_out: st.SearchStrategy[int] | None = None
) -> Problem:
    """1 .. max_tokens tokens (one token included), random embeddings and weights."""
    tokens = draw(st.integers(1, max_tokens))
    d_in = draw(st.integers(1, 4))
    width = draw(d_out if d_out is not None else st.integers(1, 4))

    def matrix(rows: int, cols: int) -> tuple[tuple[float, ...], ...]:
        cells = draw(st.lists(values, min_size=rows * cols, max_size=rows * cols))
        return tuple(tuple(cells[r * cols : (r + 1) * cols]) for r in range(rows))

    embeddings = matrix(tokens, d_in)
    weights = {name: matrix(d_in, width) for name in ("query", "key", "value")}
    input_set = InputSet(
        name="random",
        tokens=tuple(f"t{i}" for i in range(tokens)),
        embeddings=embeddings,
        weights=weights,
    )
    as_arrays = {name: np.array(m, dtype=np.float64) for name, m in weights.items()}
    return Problem(input_set, np.array(embeddings, dtype=np.float64), as_arrays)


def trace(variant: str, inputs: Any = "your-journey", **options: Any) -> Trace:
    """Run ``variant`` to the end; trace options by keyword, the variant's own under ``options``."""
    variant_options = options.pop("options", {})
    return start_trace(
        variant, TraceOptions(inputs=inputs, options=variant_options, **options), HOST
    ).run_to_end()


def output(variant: str, inputs: Any = "your-journey", **options: Any) -> torch.Tensor:
    found = trace(variant, inputs, **options).output
    assert found is not None
    return found


def softmax_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, visible: np.ndarray
) -> np.ndarray:
    """Reference attention in float64: row i mixes the values of the keys ``visible[i]`` allows.

    A row with no visible key is all zeros (what the variants promise instead of NaN).
    """
    scores = q @ k.T / np.sqrt(k.shape[-1])
    scores = np.where(visible, scores, -np.inf)
    out = np.zeros((q.shape[0], v.shape[-1]))
    for i in range(q.shape[0]):
        if not visible[i].any():
            continue
        row = np.exp(scores[i] - scores[i][visible[i]].max())
        out[i] = row / row.sum() @ v
    return out


def close(actual: torch.Tensor, expected: np.ndarray | torch.Tensor) -> None:
    torch.testing.assert_close(
        actual.double(), torch.as_tensor(expected, dtype=torch.float64), atol=1e-4, rtol=1e-4
    )
