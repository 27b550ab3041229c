"""rope: rotary embeddings against an independent numpy oracle, for every scaling and both
pairings, and the property that makes them position embeddings: with identical embeddings
the scores depend only on the distance i − j."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.variants.problems import trace
from tracer.errors import UsageError
from tracer.inputs import InputSet
from tracer.testing import run_variant, substeps_of

SCALINGS = ("none", "linear", "ntk", "yarn")
PAIRINGS = ("interleaved", "half")
D = 8
BASE = 10000.0


def oracle_theta(scaling: str, factor: float, d: int = D, base: float = BASE) -> tuple:
    """(θ per pair, temperature on q and k), written from the papers' formulas in float64."""
    exponent = np.arange(0, d, 2, dtype=np.float64) / d  # 2i / d
    theta = base**-exponent
    if scaling == "linear":  # position interpolation: position m becomes m / s
        return theta / factor, 1.0
    if scaling == "ntk":  # NTK-aware: a larger base, base · s^(d / (d − 2))
        return (base * factor ** (d / (d - 2))) ** -exponent, 1.0
    if scaling == "yarn":  # the paper's printed ramp, in r (-o ramp=turns); L = 2048, α = 1, β = 32
        wavelength = 2 * np.pi / theta
        r = 2048 / wavelength
        gamma = np.clip((r - 1.0) / (32.0 - 1.0), 0.0, 1.0)
        return (1 - gamma) * theta / factor + gamma * theta, 0.1 * math.log(factor) + 1.0
    return theta, 1.0


def oracle_rotate(x: np.ndarray, theta: np.ndarray, pairing: str, temperature: float) -> np.ndarray:
    """Each pair read as one complex number and multiplied by e^(i·m·θ)."""
    n, d = x.shape
    if pairing == "interleaved":
        z = x[:, 0::2] + 1j * x[:, 1::2]
    else:
        z = x[:, : d // 2] + 1j * x[:, d // 2 :]
    z = z * np.exp(1j * np.arange(n)[:, None] * theta[None, :]) * temperature
    out = np.empty_like(x)
    if pairing == "interleaved":
        out[:, 0::2], out[:, 1::2] = z.real, z.imag
    else:
        out[:, : d // 2], out[:, d // 2 :] = z.real, z.imag
    return out


def oracle(run_context, scaling: str, pairing: str, factor: float) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    x = run_context.inputs.double().numpy()
    W = run_context.weights
    q, k, v = (x @ w.double().numpy() for w in (W.query, W.key, W.value))
    theta, temperature = oracle_theta(scaling, factor)
    rq, rk = (oracle_rotate(t, theta, pairing, temperature) for t in (q, k))
    scores = rq @ rk.T
    scaled = scores / np.sqrt(D)
    weights = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return {"theta": theta, "rq": rq, "rk": rk, "scores": scores, "context": weights @ v}


@pytest.mark.parametrize("pairing", PAIRINGS)
@pytest.mark.parametrize("scaling", SCALINGS)
def test_matches_the_numpy_oracle(scaling: str, pairing: str) -> None:
    factor = 4.0
    # yarn's default ramp (in the pair index, transformers') is checked against transformers
    # itself in test_rope_conventions.py; here the paper's printed one, from its equation.
    ramp = {"ramp": "turns"} if scaling == "yarn" else {}
    got = trace(
        "rope",
        init="randn",
        d_out=D,
        options={"scaling": scaling, "pairing": pairing, "factor": factor, **ramp},
    )
    want = oracle(got.context, scaling, pairing, factor)
    np.testing.assert_allclose(got.stage("angles").tensors["theta"], want["theta"], rtol=1e-6)
    rotated = got.stage("rotated").tensors
    np.testing.assert_allclose(rotated["rotated_queries"], want["rq"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rotated["rotated_keys"], want["rk"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got.stage("scores").tensors["scores"], want["scores"], atol=1e-4)
    assert got.output is not None
    np.testing.assert_allclose(got.output, want["context"], rtol=1e-4, atol=1e-5)


def test_without_rotation_it_is_trainable_attention() -> None:
    """Position 0 is not turned, and the values never are: one token is trainable's."""
    one = InputSet(name="one", tokens=("x",), embeddings=((0.3, -0.2, 0.9),))
    got = trace("rope", inputs=one, d_out=4)
    plain = trace("trainable", inputs=one, d_out=4)
    torch.testing.assert_close(got.output, plain.output)
    torch.testing.assert_close(
        got.stage("rotated").tensors["rotated_queries"], plain.stage("queries").tensors["queries"]
    )


SAME = InputSet(
    name="same",
    tokens=tuple(f"t{i}" for i in range(7)),
    embeddings=((0.4, -1.1, 0.7),) * 7,
)


@pytest.mark.parametrize("scaling", SCALINGS)
def test_identical_embeddings_give_scores_constant_along_each_diagonal(scaling: str) -> None:
    for pairing in PAIRINGS:
        scores = (
            trace(
                "rope",
                inputs=SAME,
                init="randn",
                d_out=D,
                options={"scaling": scaling, "pairing": pairing, "factor": 3.0},
            )
            .stage("scores")
            .tensors["scores"]
        )
        n = scores.shape[0]
        for offset in range(-n + 1, n):
            diagonal = torch.diagonal(scores, offset)
            torch.testing.assert_close(
                diagonal, diagonal[:1].expand_as(diagonal), atol=1e-4, rtol=1e-5
            )
        # ... and not constant overall: the distance matters.
        assert float(scores.max() - scores.min()) > 1e-2


def test_the_loop_rotates_one_pair_of_one_token() -> None:
    got = run_variant("rope", init="randn", d_out=4, keep_substeps=True, pairing="half")
    steps = substeps_of(got, "rotated")
    assert [s.position for s in steps[:3]] == [(0, 0), (0, 1), (1, 0)]  # half: pair 1 = (1, 3)
    step = steps[2 * 2 + 1]  # token 2, pair 1: features 1 and 3
    theta1 = BASE ** (-2 / 4)
    angle = 2 * theta1
    rotation = torch.tensor(
        [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
    )
    torch.testing.assert_close(step.tensors["rotation"], rotation)
    queries = got.stage("queries").tensors["queries"]
    torch.testing.assert_close(step.tensors["query_pair"], queries[2, [1, 3]])
    rotated = got.stage("rotated").tensors["rotated_queries"]
    torch.testing.assert_close(
        torch.stack([step.tensors["query_first"], step.tensors["query_second"]]),
        rotated[2, [1, 3]],
    )


def test_with_one_pair_ntk_leaves_the_speed_alone() -> None:
    """d = 2: base' = base·s^(d/(d−2)) is undefined, and θ₀ = base^0 = 1 needs no base."""
    ntk = trace("rope", options={"scaling": "ntk"})
    assert ntk.stage("angles").tensors["theta"].tolist() == [1.0]
    torch.testing.assert_close(ntk.output, trace("rope").output)


@pytest.mark.parametrize("scaling", SCALINGS)
def test_at_the_default_width_too_scores_depend_on_distance(scaling: str) -> None:
    scores = trace("rope", inputs=SAME, options={"scaling": scaling}).stage("scores")
    table = scores.tensors["scores"]
    for offset in range(-6, 7):
        diagonal = torch.diagonal(table, offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"d_out": 3}, "--d-out 3 is odd"),
        ({"options": {"scaling": "sideways"}}, "scaling"),
    ],
)
def test_shapes_that_cannot_work_are_usage_errors(options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        trace("rope", **options)


def test_a_focused_query_is_that_row() -> None:
    options = {"scaling": "yarn", "pairing": "half"}
    full = trace("rope", init="randn", d_out=D, options=options).output
    focused = trace("rope", init="randn", d_out=D, query=2, options=options).output
    torch.testing.assert_close(focused, full[2])
