"""An independent fact-check of the shipped lessons: every table a lesson shows, recomputed in
numpy from what the run was given, and every number typed into its prose found among them.

    python scripts/fact_check.py                 # every shipped lesson
    python scripts/fact_check.py 05 07           # some lessons, by number
    python scripts/fact_check.py --all           # every shipped lesson (the old spelling)

For each table a lesson shows or asks about (a ``show``, either side of a ``compare``, a
quiz's ``show:``, ``cells:`` and ``answer``, a lesson's ``values``), the stage tensor it is
taken from is recomputed here with numpy, by the textbook formulas (scores = Q Kᵀ, scaled by
1/√d_k, a causal or a banded mask, softmax, weights @ V, heads split and joined), from the
run's *given* numbers alone: the inputs (checked against the course notes' embeddings where
they are the built-in set) and the weights a variant drew from its seed (numpy cannot draw
torch's random numbers; where a variant shows no weights, its queries, keys and values are
the given numbers and are said so). The backward lessons' gradients are taken two ways the
variants do not take them: the softmax's Jacobian written out row by row, and central
differences of the loss for the weight and embedding gradients; rotary speeds, YaRN's ramp
and attention factor from the papers' formulas; latent attention from the projections it
shows; the paged cache's blocks from t // block and t % block. Their loops (the backward's
rows, flash-backward's tiles with their running sums, rotary pairs, paged decoding steps) are
recomputed sub-step by sub-step. The lesson's own operations (``then:``) are checked by
the authoring tests (tests/lessons/test_authoring.py) and every quiz's answer by its own
oracle (tests/lessons/test_shipped.py); this script checks what they start from.

Every decimal number typed into a lesson's prose (not a ``{{live value}}``) must be one the
lesson's tables hold, as printed (4 decimals), or a value the prose derives in words: one
that is none is reported, as stale.

Prints a table per lesson: tensors compared, cells compared, mismatches, variants without an
oracle here (named), typed numbers found and not found; exit status 1 when anything is
false, 0 otherwise. No timing, no network.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.data import seeds  # noqa: E402
from tracer.lessons.lesson_runner import LessonRunner  # noqa: E402
from tracer.lessons.loader import find_lessons, load_lesson  # noqa: E402
from tracer.lessons.model import Lesson, Loop, TensorRef  # noqa: E402
from tracer.plugin_host import PluginHost  # noqa: E402

RTOL = 1e-4
ATOL = 1e-5
"""float32 arithmetic against float64: a few units in the fifth significant digit."""

Arrays = dict[str, dict[str, np.ndarray]]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    finite = np.where(np.isfinite(x), x, -np.inf)
    top = np.max(finite, axis=axis, keepdims=True)
    e = np.exp(finite - top)
    return e / e.sum(axis=axis, keepdims=True)


def causal(n: int, m: int | None = None) -> np.ndarray:
    """1 where key j comes after query i (hidden), 0 elsewhere."""
    m = n if m is None else m
    return (np.arange(m)[None, :] > np.arange(n)[:, None]).astype(float)


@dataclass
class Given:
    """What a run was given: the inputs, the source, and each stage tensor as drawn."""

    x: np.ndarray
    source: np.ndarray | None
    tensors: Arrays
    options: dict[str, object]
    query: int | None
    partner: Arrays | None = None
    """The stages of the variant it must agree with, run with the same options (kv-cache:
    masked, whose causal attention it computes by another route), or None."""

    def t(self, stage: str, name: str | None = None) -> np.ndarray:
        found = self.tensors[stage]
        return found[name] if name is not None else next(iter(found.values()))


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None) -> Arrays:
    scores = q @ np.swapaxes(k, -1, -2)
    scaled = scores / math.sqrt(k.shape[-1])
    masked = scaled if mask is None else np.where(mask > 0, -np.inf, scaled)
    weights = softmax(masked)
    return {
        "scores": {"scores": scores},
        "scaled": {"scaled": scaled},
        "masked_scores": {"masked_scores": masked},
        "weights": {"weights": weights},
        "context": {"context": weights @ v},
    }


def naive(given: Given) -> Arrays:
    x = given.x
    scores = x @ x.T
    weights = softmax(scores)
    return {
        "inputs": {"inputs": x},
        "scores": {"scores": scores},
        "weights": {"weights": weights, "sum_normalized": scores / scores.sum(-1, keepdims=True)},
        "context": {"context": weights @ x},
    }


def vectorized(given: Given) -> Arrays:
    x = given.x
    weights = softmax(x @ x.T)
    return {"scores": {"scores": x @ x.T}, "weights": {"weights": weights},
            "context": {"context": weights @ x}}  # fmt: skip


def trainable(given: Given) -> Arrays:
    x = given.x
    wq, wk, wv = (given.t("projections", n) for n in ("W_query", "W_key", "W_value"))
    q, k, v = x @ wq, x @ wk, x @ wv
    out = _attend(q, k, v, None)
    out["queries"] = {"queries": q}
    out["keys"] = {"keys": k}
    out["values"] = {"values": v}
    out.pop("masked_scores")
    return out


def masked(given: Given) -> Arrays:
    q, k, v = given.t("queries"), given.t("keys"), given.t("values")
    n = k.shape[0]
    mask = causal(n)
    out = _attend(q, k, v, mask)
    scaled = out["scaled"]["scaled"]
    plain = softmax(scaled)
    zeroed = plain * (1 - mask)
    renormalized = zeroed / zeroed.sum(axis=-1, keepdims=True)
    out["mask"] = {"mask": mask}
    out["renormalized"] = {"softmax": plain, "zeroed": zeroed, "renormalized": renormalized}
    out["weights"]["difference"] = out["weights"]["weights"] - renormalized
    if float(given.options.get("dropout", 0) or 0):
        out.pop("context")  # dropout's draw is torch's; its context follows from it
    return out


def heads_wrapper(given: Given) -> Arrays:
    x = given.x
    wq, wk, wv = (given.t("projections", n) for n in ("W_query", "W_key", "W_value"))
    q, k, v = x @ wq, x @ wk, x @ wv  # (heads, n, d)
    out = _attend(q, k, v, causal(x.shape[0]))
    out["queries"] = {"queries": q}
    out["keys"] = {"keys": k}
    out["values"] = {"values": v}
    out["mask"] = {"mask": causal(x.shape[0])}
    head_context = out.pop("context")["context"]
    out["head_context"] = {"head_context": head_context}
    out["context"] = {"context": np.concatenate(list(head_context), axis=-1)}
    return out


def multihead(given: Given) -> Arrays:
    x = given.x
    p = given.tensors["projections"]
    q, k, v = x @ p["W_query"], x @ p["W_key"], x @ p["W_value"]
    heads = int(given.options.get("heads", 2))  # type: ignore[call-overload]
    n, d = q.shape

    def split(t: np.ndarray) -> np.ndarray:
        return t.reshape(n, heads, d // heads).transpose(1, 0, 2)

    out = _attend(split(q), split(k), split(v), causal(n))
    head_context = out.pop("context")["context"]
    concat = head_context.transpose(1, 0, 2).reshape(n, d)
    out["projected"] = {"queries": q, "keys": k, "values": v}
    out["split"] = {"queries": split(q), "keys": split(k), "values": split(v)}
    out["mask"] = {"mask": causal(n)}
    out["head_context"] = {"head_context": head_context}
    out["concat"] = {"concat": concat}
    out["context"] = {"context": concat @ p["W_out"] + p["b_out"]}
    return out


def sliding(given: Given) -> Arrays:
    q, k, v = (given.t("projected", n) for n in ("queries", "keys", "values"))
    n = k.shape[0]
    window = int(given.options.get("window", 3))  # type: ignore[call-overload]
    far = (np.arange(n)[:, None] - np.arange(n)[None, :]) >= window
    band = np.maximum(causal(n), far.astype(float))
    out = _attend(q, k, v, band)
    out.pop("scores")
    out["mask"] = {"causal": causal(n), "band": band}
    out["weights"]["keys_seen"] = (1 - band).sum(axis=-1)
    return out


def grouped(given: Given) -> Arrays:
    x = given.x
    p = given.tensors["projections"]
    q, k, v = x @ p["W_query"], x @ p["W_key"], x @ p["W_value"]
    heads = int(given.options.get("heads", 4))  # type: ignore[call-overload]
    kv = int(given.options.get("kv_heads", 1))  # type: ignore[call-overload]
    n, d = q.shape
    hd = d // heads
    qs = q.reshape(n, heads, hd).transpose(1, 0, 2)
    ks = k.reshape(n, kv, hd).transpose(1, 0, 2)
    vs = v.reshape(n, kv, hd).transpose(1, 0, 2)
    group = heads // kv
    reads = np.arange(heads) // group  # query head h reads key/value head h // group
    out = _attend(qs, ks[reads], vs[reads], causal(n))
    head_context = out.pop("context")["context"]
    concat = head_context.transpose(1, 0, 2).reshape(n, d)
    out.pop("scores")
    out.pop("masked_scores")
    out["projected"] = {"queries": q, "keys": k, "values": v}
    out["split"] = {"queries": qs, "keys": ks, "values": vs}
    out["groups"] = {"reads": (reads[:, None] == np.arange(kv)[None, :]).astype(float)}
    out["head_context"] = {"head_context": head_context}
    out["context"] = {"context": concat @ p["W_out"] + p["b_out"]}
    return out


def cross(given: Given) -> Arrays:
    x, s = given.x, given.source
    assert s is not None
    wq, wk, wv = (
        (given.t("projections", n) for n in ("W_query", "W_key", "W_value"))
        if ("projections" in given.tensors)
        else (None, None, None)
    )
    if wq is None:
        q, k, v = given.t("queries"), given.t("keys"), given.t("values")
    else:
        q, k, v = x @ wq, s @ wk, s @ wv
    out = _attend(q, k, v, None)
    out.pop("masked_scores")
    out["inputs"] = {"inputs": x}
    out["source"] = {"source": s}
    return out


def causal_given(given: Given, stage: str = "projected") -> Arrays:
    """kv-cache and online softmax: causal attention over the queries, keys and values the
    run was given (its own stages say how it got there; the result must be the same)."""
    if stage in given.tensors:
        q, k, v = (given.t(stage, n) for n in ("queries", "keys", "values"))
    else:
        return {}
    hide = causal(k.shape[0]) if given.options.get("causal", stage != "projected") else None
    out = _attend(q, k, v, hide)
    scaled = out["scaled"]["scaled"]
    if hide is not None:
        scaled = np.where(hide > 0, -np.inf, scaled)
    m = scaled.max(axis=-1)  # once every tile is read: each row's maximum, and its sum
    tiles = {"m": m, "l": np.exp(scaled - m[:, None]).sum(axis=-1)}
    return {"weights": out["weights"], "context": out["context"], "tiles": tiles}


GIVEN = {
    "cross-attention": ("projections", "queries", "keys", "values"),
    "masked": ("projections", "queries", "keys", "values"),
    "kv-cache": ("decode",),
    "training": ("trained",),
    "induction": ("tokens", "logits", "layer0_weights", "layer1_weights", "layer1_outputs"),
    "model": ("tokens", "inputs", "queries", "rotary", "context", "output"),
    "backward": ("inputs", "queries", "keys", "values"),
    "flash-backward": ("inputs", "projected"),
    "rope": ("inputs", "queries", "keys", "values"),
    "mla": ("inputs", "projections"),
    "paged-kv-cache": ("inputs",),
}
"""Stages that are what a run was given: weights drawn from a seed (numpy cannot draw torch's
random numbers), or the projections of a variant that shows no weights."""


def kv_cache(given: Given) -> Arrays:
    """Causal attention from the masked variant's queries, keys and values (the same seed
    draws the same weights), and the multiply-adds the stage's formula counts: t tokens so far,
    3·d_in·d_out + 2·t·d_out with the cache, 3·t·d_in·d_out + 2·t²·d_out recomputing."""
    out: Arrays = {}
    if given.partner is not None:
        q, k, v = (next(iter(given.partner[n].values())) for n in ("queries", "keys", "values"))
        done = _attend(q, k, v, causal(k.shape[0]))
        out = {"weights": done["weights"], "context": done["context"]}
        d_in, d_out = given.x.shape[1], k.shape[1]
        t = np.arange(1, given.x.shape[0] + 1, dtype=float)
        cached = 3 * d_in * d_out + 2 * t * d_out
        recompute = 3 * t * d_in * d_out + 2 * t**2 * d_out
        out["work"] = {
            "cached": cached,
            "recompute": recompute,
            "cached_total": cached.cumsum(),
            "recompute_total": recompute.cumsum(),
        }
    return out


def training(given: Given) -> Arrays:
    """What training ends with, from the trained projections: the weights after, and the last
    loss, L = mean(-log α[i, partner(i)]) + mean((α V - Y)²), partner(i) = i + 1 (the last: 0).
    The targets Y and the weights before come from the untrained projections, which the run
    draws from its seed and does not show: given."""
    x = given.x
    n = x.shape[0]
    trained = given.tensors["trained"]
    q, k, v = x @ trained["W_query"], x @ trained["W_key"], x @ trained["W_value"]
    after = softmax(q @ k.T / math.sqrt(k.shape[-1]))
    partner = (np.arange(n) + 1) % n
    targets = given.tensors["objective"]["targets"]
    loss = -np.log(after[np.arange(n), partner]).mean() + ((after @ v - targets) ** 2).mean()
    out: Arrays = {"objective": {"partner": partner.astype(float)}, "weights": {"after": after}}
    losses = given.tensors["steps"]["loss"].copy()
    losses[-1] = loss  # the earlier losses need the untrained projections: as the run gave them
    out["steps"] = {"loss": losses}
    return out


def induction(given: Given) -> Arrays:
    """What follows from the model's own numbers by one textbook step: the residual stream is
    the token embedding plus the position embedding; the prediction is the logits' argmax,
    its probability their softmax's largest, and it is correct where it is the next token."""
    embed, logits = given.tensors["embed"], given.tensors["logits"]["logits"]
    ids = given.tensors["tokens"]["ids"]
    predicted = logits.argmax(axis=-1)
    return {
        "embed": {"residual": embed["token_embedding"] + embed["position_embedding"]},
        "prediction": {
            "predicted": predicted.astype(float),
            "probability": softmax(logits).max(axis=-1),
            "actual_next": ids[1:],
            "correct": (predicted[:-1] == ids[1:]).astype(float),
        },
    }


def model(given: Given) -> Arrays:
    """One layer of a transformers model, from its rotated queries and keys: ω = Q Kᵀ /
    √head_dim plus the lowest float32 on the later keys (the model's own mask), α =
    softmax(ω); and each head's share on the previous token, mean_i α[i, i-1], from the
    heads' weights as the run gave them."""
    rotary = given.tensors.get("rotary")
    if rotary is None:
        return {}
    q, k = rotary["queries"], rotary["keys"]
    n = k.shape[0]
    scores = q @ k.T / math.sqrt(k.shape[-1])
    lowest = float(np.finfo(np.float32).min)
    out: Arrays = {
        "scores": {"scores": np.where(causal(n) > 0, scores + lowest, scores)},
        "weights": {"weights": softmax(np.where(causal(n) > 0, -np.inf, scores))},
    }
    heads = given.tensors.get("heads")
    if heads is not None:  # every head's weights as the run gave them; each one's share
        rows = np.arange(1, n)
        out["heads"] = {"previous_token": heads["weights"][:, rows, rows - 1].mean(axis=-1)}
    return out


# Lessons 14-18 ---------------------------------------------------------------------------
# Each oracle below starts from what the run was given (its queries, keys and values, drawn
# from the seed, or the projections it shows) and recomputes the rest by the textbook
# formulas; where a formula has a second, independent route (the softmax's Jacobian written
# out, a finite difference of the loss), that route is the one taken here.


def _weights_from(x: np.ndarray, projected: np.ndarray) -> np.ndarray:
    """The projection W with projected = x W, by least squares (x has full column rank)."""
    w, *_ = np.linalg.lstsq(x, projected, rcond=None)
    return np.asarray(w)


def _backward_from(
    x: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, d_o: np.ndarray, hide: bool
) -> Arrays:
    """The forward pass and every gradient of L = Σ dO ∘ O, for one head. dS is J dP with
    each row's Jacobian diag(p) − p pᵀ written out; dW and dX are central differences of L
    (float64, step 1e-6), not the chain rule."""
    n, d_k = k.shape
    mask = causal(n) if hide else None
    out = _attend(q, k, v, mask)
    p = out["weights"]["weights"]
    o = out["context"]["context"]
    s = out["scaled"]["scaled"]
    d_v = p.T @ d_o
    d_p = d_o @ v.T
    d_s = np.stack([(np.diag(p[i]) - np.outer(p[i], p[i])) @ d_p[i] for i in range(n)])
    wq, wk, wv = (_weights_from(x, t) for t in (q, k, v))

    def loss(x_: np.ndarray, wq_: np.ndarray, wk_: np.ndarray, wv_: np.ndarray) -> float:
        done = _attend(x_ @ wq_, x_ @ wk_, x_ @ wv_, mask)
        return float((done["context"]["context"] * d_o).sum())

    def numeric(which: int) -> np.ndarray:
        args = [x, wq, wk, wv]
        grad = np.zeros_like(args[which])
        for at in np.ndindex(grad.shape):
            up = [a.copy() for a in args]
            down = [a.copy() for a in args]
            up[which][at] += 1e-6
            down[which][at] -= 1e-6
            grad[at] = (loss(*up) - loss(*down)) / 2e-6
        return grad

    forward: Arrays = {
        "scaled": {"S": s},
        "weights": {"P": p},
        "context": {"O": o},
        "forward": {
            "O": o,
            "L": np.log(np.exp(np.where(mask > 0, -np.inf, s) if hide else s).sum(-1)),
        },
        "upstream": {"dO": d_o},
        "grad_values": {"dV": d_v},
        "grad_weights": {"dP": d_p},
        "delta": {"D": (d_o * o).sum(-1), "D_from_dP": (d_p * p).sum(-1)},
        "grad_scores": {"dS": d_s},
        "grad_queries": {"dQ": d_s @ k / math.sqrt(d_k)},
        "grad_keys": {"dK": d_s.T @ q / math.sqrt(d_k)},
        "grad_projections": {"dW_q": numeric(1), "dW_k": numeric(2), "dW_v": numeric(3)},
        "grad_inputs": {"dX": numeric(0)},
    }
    if hide:
        forward["masked_scores"] = {"masked_scores": np.where(mask > 0, -np.inf, s)}
    return forward


def _upstream(given: Given, shape: tuple[int, ...]) -> np.ndarray:
    """dO: ones as the lesson says (-o upstream=ones), or the run's draw (numpy cannot draw
    torch's)."""
    if given.options.get("upstream", "ones") == "ones":
        return np.ones(shape)
    return given.t("upstream", "dO")


def backward(given: Given) -> Arrays:
    q, k, v = given.t("queries", "Q"), given.t("keys", "K"), given.t("values", "V")
    out = _backward_from(
        given.x, q, k, v, _upstream(given, q.shape), bool(given.options.get("causal"))
    )
    out.pop("forward")
    return out


def flash_backward(given: Given) -> Arrays:
    """The naive backward's numbers (the tiles change only the order of the sums), the tile
    grid, and which tiles causal attention lets it skip: key tile j, query tile i, skipped
    when the first key of j comes after the last query of i."""
    p = given.tensors["projected"]
    q, k, v = p["Q"], p["K"], p["V"]
    hide = bool(given.options.get("causal"))
    out = _backward_from(given.x, q, k, v, _upstream(given, q.shape), hide)
    n = k.shape[0]
    tile = int(given.options.get("tile", 2))  # type: ignore[call-overload]
    starts = list(range(0, n, tile))
    sizes = [min(tile, n - s) for s in starts]
    pairs = np.array([[a * b for b in sizes] for a in sizes], dtype=float)
    skipped = np.array(
        [[float(hide and kj > qi + sq - 1) for qi, sq in zip(starts, sizes, strict=True)]
         for kj in starts]
    )  # fmt: skip
    return {
        "forward": out["forward"],
        "upstream": out["upstream"],
        "delta": {"D": out["delta"]["D"]},
        "tiles": {
            "dQ": out["grad_queries"]["dQ"],
            "dK": out["grad_keys"]["dK"],
            "dV": out["grad_values"]["dV"],
        },
        "skipped": {"pairs": pairs, "skipped": skipped},
        "grad_projections": out["grad_projections"],
        "grad_inputs": out["grad_inputs"],
    }


def _speeds(d: int, o: dict[str, object]) -> dict[str, np.ndarray]:
    """θ per pair as the RoFormer paper and the scalings' papers define them (float64)."""
    base = float(o.get("base", 10000.0))  # type: ignore[arg-type]
    kind = str(o.get("scaling", "none"))
    s = float(o.get("factor", 1.0))  # type: ignore[arg-type]
    i = np.arange(d // 2, dtype=float)
    plain = base ** (-2 * i / d)
    out: dict[str, np.ndarray] = {"theta": plain}
    if kind == "linear":
        out = {"theta": plain / s, "unscaled": plain}
    elif kind == "ntk":
        out = {"theta": (base * s ** (d / (d - 2))) ** (-2 * i / d), "unscaled": plain}
    elif kind == "yarn":
        length = float(o.get("original_max_position_embeddings", 2048))  # type: ignore[arg-type]
        fast, slow = float(o.get("beta_fast", 32)), float(o.get("beta_slow", 1))  # type: ignore[arg-type]
        r = length * plain / (2 * math.pi)
        if o.get("ramp", "index") == "turns":
            gamma = np.clip((r - slow) / (fast - slow), 0, 1)
        else:  # where a pair would turn β times: d·ln(L / (2π β)) / (2 ln base)
            where = [
                d * math.log(length / (2 * math.pi * b)) / (2 * math.log(base))
                for b in (fast, slow)
            ]
            a, b = max(math.floor(where[0]), 0), min(math.ceil(where[1]), d // 2 - 1)
            gamma = np.clip((b - i) / (b - a if b != a else 0.001), 0, 1)
            out["_where"] = np.array(where)  # the pairs that would turn β times
        out |= {
            "theta": (1 - gamma) * plain / s + gamma * plain,
            "unscaled": plain,
            "turns": r,
            "ramp": gamma,
            "temperature": np.array(0.1 * math.log(s) + 1),
        }
    return out


def _turn(t: np.ndarray, angle: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Each row m of t with feature first[i] and second[i] turned by angle[m, i]."""
    out = t.copy()
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = t[..., first], t[..., second]
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out


def rope(given: Given) -> Arrays:
    q, k, v = given.t("queries"), given.t("keys"), given.t("values")
    n, d = k.shape
    speeds = _speeds(d, given.options)
    half = given.options.get("pairing", "interleaved") == "half"
    first = np.arange(d // 2) if half else np.arange(0, d, 2)
    second = first + d // 2 if half else first + 1
    angle = np.arange(n)[:, None] * speeds["theta"][None, :]
    factor = float(speeds.get("temperature", np.array(1.0)))
    rq, rk = factor * _turn(q, angle, first, second), factor * _turn(k, angle, first, second)
    scores = rq @ rk.T
    weights = softmax(scores / math.sqrt(d))
    where = speeds.pop("_where", None)
    return {
        **({"_where": {"pair": where}} if where is not None else {}),
        "angles": {**speeds, "first": first.astype(float), "second": second.astype(float)},
        "positions": {"angle": angle, "cos": np.cos(angle), "sin": np.sin(angle)},
        "rotated": {"rotated_queries": rq, "rotated_keys": rk},
        "scores": {"scores": scores},
        "scaled": {"scaled": scores / math.sqrt(d)},
        "weights": {"weights": weights},
        "context": {"context": weights @ v},
    }


def mla(given: Given) -> Arrays:
    """DeepSeek-V2's latent attention from the projections the run shows: c = x W_dkv
    (RMS-normalised with latent_norm), k_rope = RoPE(x W_kr) shared by the heads, each head's
    score [q_nope, q_rope]·[c W_uk, k_rope] / √(head_dim + rope_dim), causal, and the heads'
    contexts through W_out; the absorbed route's tables from the same numbers regrouped."""
    x, w = given.x, given.tensors["projections"]
    o = given.options
    heads = int(o.get("heads", 2))  # type: ignore[call-overload]
    rope_dim = int(o.get("rope_dim", 2))  # type: ignore[call-overload]
    n, d_out = x.shape[0], w["W_query"].shape[1]
    hd = d_out // heads
    rank = w["W_dkv"].shape[1]
    vd = w["W_uv"].shape[1] // heads
    raw = x @ w["W_dkv"]
    c = raw / np.sqrt((raw**2).mean(-1, keepdims=True) + 1e-6) if o.get("latent_norm") else raw
    pairs = np.arange(0, rope_dim, 2)
    angle = np.arange(n)[:, None] * (10000.0 ** (-pairs / rope_dim))[None, :]
    k_rope = _turn(x @ w["W_kr"], angle, pairs, pairs + 1)
    q_nope = (x @ w["W_query"]).reshape(n, heads, hd).transpose(1, 0, 2)
    q_rope = _turn(
        (x @ w["W_qr"]).reshape(n, heads, rope_dim).transpose(1, 0, 2), angle, pairs, pairs + 1
    )
    w_uk = w["W_uk"].reshape(rank, heads, hd).transpose(1, 0, 2)
    w_uv = w["W_uv"].reshape(rank, heads, vd).transpose(1, 0, 2)
    keys, values = c @ w_uk, c @ w_uv
    scaled = (q_nope @ np.swapaxes(keys, 1, 2) + q_rope @ k_rope.T) / math.sqrt(hd + rope_dim)
    weights = softmax(np.where(causal(n) > 0, -np.inf, scaled))
    head_context = weights @ values
    context = head_context.transpose(1, 0, 2).reshape(n, heads * vd) @ w["W_out"]
    context = context + w["b_out"] if "b_out" in w else context
    latent: dict[str, np.ndarray] = {"latent": c, "key_rope": k_rope}
    if o.get("latent_norm"):
        latent["latent_before_norm"] = raw
    return {
        "latent": latent,
        "queries": {"query_nope": q_nope, "query_rope": q_rope},
        "absorbed": {"absorbed_queries": q_nope @ np.swapaxes(w_uk, 1, 2)},
        "keys_values": {"keys": keys, "values": values},
        "scaled": {"scaled": scaled},
        "weights": {"weights": weights},
        "head_context": {
            "head_context": head_context,
            "latent_context": weights @ c,
            "folded": w_uv @ w["W_out"].reshape(heads, vd, d_out),
        },
        "context": {"context": context},
        "check": {"difference": np.zeros_like(context), "naive": context, "absorbed": context},
    }


def paged(given: Given) -> Arrays:
    """Causal attention over the masked variant's queries, keys and values (the same seed),
    and where each token is kept: entry t // block and slot t % block of a table of blocks
    the other request (the even-numbered ones) does not hold."""
    out: Arrays = {}
    if given.partner is None:
        return out
    q, k, v = (next(iter(given.partner[n].values())) for n in ("queries", "keys", "values"))
    n = k.shape[0]
    size = int(given.options.get("block", 2))  # type: ignore[call-overload]
    done = _attend(q, k, v, causal(n))
    t = np.arange(n)
    out = {
        "decode": {"keys": k, "values": v},
        "weights": done["weights"],
        "context": done["context"],
        "blocks": {"entry": (t // size).astype(float), "slot": (t % size).astype(float)},
    }
    table = given.tensors.get("blocks", {}).get("table")
    if table is not None:  # a block of this text's own, odd-numbered, each once, and in the pool
        needed = -(-n // size)
        ok = (
            len(table) == needed
            and len(set(table.tolist())) == needed
            and all(b % 2 == 1 for b in table)
        )
        owner = np.zeros(2 * needed)
        owner[0::2] = 2
        owner[table.astype(int)] = 1
        out["blocks"]["owner"] = owner
        out["blocks"]["table"] = table if ok else np.full_like(table, np.nan)
        pool_k = np.zeros((2 * needed, size, k.shape[1]))
        pool_v = np.zeros_like(pool_k)
        pool_k[table.astype(int)[t // size], t % size] = k
        pool_v[table.astype(int)[t // size], t % size] = v
        out["blocks"]["key_pool"] = pool_k
        out["blocks"]["value_pool"] = pool_v
    return out


# Loops: each sub-step's tensors, from the same oracles ------------------------------------


def _backward_rows(given: Given, position: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Row i of the softmax's backward: p, dp, dO[i], O[i], both forms of D, ds, and the
    Jacobian diag(p) − p pᵀ with its product with dp."""
    q, k, v = given.t("queries", "Q"), given.t("keys", "K"), given.t("values", "V")
    hide = bool(given.options.get("causal"))
    out = _backward_from(given.x, q, k, v, _upstream(given, q.shape), hide)
    (i,) = position
    p, dp = out["weights"]["P"][i], out["grad_weights"]["dP"][i]
    d_o, o = out["upstream"]["dO"][i], out["context"]["O"][i]
    jacobian = np.diag(p) - np.outer(p, p)
    return {
        "p": p, "dp": dp, "do": d_o, "o": o, "D_from_dP": np.array(p @ dp),
        "D": np.array(d_o @ o), "ds": out["grad_scores"]["dS"][i], "jacobian": jacobian,
        "jvp": jacobian @ dp,
    }  # fmt: skip


def _flash_tile(given: Given, position: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Tile (key tile j, query tile i): its slices of L, D, S (hidden keys at −inf), P, dP, dS,
    and the running sums after it: dQ_i over key tiles 0..j, dK_j and dV_j over query tiles
    0..i."""
    p = given.tensors["projected"]
    q, k, v = p["Q"], p["K"], p["V"]
    hide = bool(given.options.get("causal"))
    out = _backward_from(given.x, q, k, v, _upstream(given, q.shape), hide)
    tile = int(given.options.get("tile", 2))  # type: ignore[call-overload]
    kj, qi = position
    rows, cols = slice(qi * tile, (qi + 1) * tile), slice(kj * tile, (kj + 1) * tile)
    seen_rows, seen_cols = slice(0, (qi + 1) * tile), slice(0, (kj + 1) * tile)
    s = out["masked_scores"]["masked_scores"] if hide else out["scaled"]["S"]
    d_s, scale = out["grad_scores"]["dS"], math.sqrt(k.shape[1])
    return {
        "L_i": out["forward"]["L"][rows], "D_i": out["delta"]["D"][rows],
        "S_ij": s[rows, cols], "P_ij": out["weights"]["P"][rows, cols],
        "dP_ij": out["grad_weights"]["dP"][rows, cols], "dS_ij": d_s[rows, cols],
        "dQ_i": d_s[rows, seen_cols] @ k[seen_cols] / scale,
        "dK_j": d_s[seen_rows, cols].T @ q[seen_rows] / scale,
        "dV_j": out["weights"]["P"][seen_rows, cols].T @ out["upstream"]["dO"][seen_rows],
    }  # fmt: skip


def _rope_pair(given: Given, position: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The pair of token m whose first feature is a (the sub-step writes cell (m, a)): its angle
    m·θᵢ, the 2 × 2 rotation (times YaRN's factor), and the query's and the key's pair before
    and after."""
    whole = rope(given)
    m, a = position
    first, second = (whole["angles"][n].astype(int) for n in ("first", "second"))
    i = int(np.flatnonzero(first == a)[0])
    b = second[i]
    angle = whole["positions"]["angle"][m, i]
    factor = float(whole["angles"].get("temperature", np.array(1.0)))
    turn = factor * np.array(
        [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
    )
    rq, rk = whole["rotated"]["rotated_queries"], whole["rotated"]["rotated_keys"]
    return {
        "angle": np.array(angle), "rotation": turn, "row_first": turn[0], "row_second": turn[1],
        "query_pair": given.t("queries")[m, [a, b]], "key_pair": given.t("keys")[m, [a, b]],
        "query_first": np.array(rq[m, a]), "query_second": np.array(rq[m, b]),
        "key_first": np.array(rk[m, a]), "key_second": np.array(rk[m, b]),
    }  # fmt: skip


def _paged_step(given: Given, position: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Decoding token t: its query and key, the t + 1 keys and values read back, the weights
    softmax(q Kᵀ/√d) over them, the context, and the table's entries so far (t // block + 1)."""
    if given.partner is None:
        return {}
    q, k, v = (next(iter(given.partner[n].values())) for n in ("queries", "keys", "values"))
    (t,) = position
    size = int(given.options.get("block", 2))  # type: ignore[call-overload]
    weights = softmax(q[t] @ k[: t + 1].T / math.sqrt(k.shape[1]))
    out = {
        "query": q[t], "new_key": k[t], "keys": k[: t + 1], "values": v[: t + 1],
        "weights": weights, "context": weights @ v[: t + 1],
    }  # fmt: skip
    table = given.tensors.get("blocks", {}).get("table")
    if table is not None:
        out["table"] = table[: t // size + 1]
    return out


SUBSTEPS: dict[tuple[str, str], Callable[[Given, tuple[int, ...]], dict[str, np.ndarray]]] = {
    ("backward", "grad_scores"): _backward_rows,
    ("flash-backward", "tiles"): _flash_tile,
    ("rope", "rotated"): _rope_pair,
    ("paged-kv-cache", "decode"): _paged_step,
}
"""The loops of lessons 14-18 whose every sub-step is recomputed here."""


def _compare(report: Report, where: str, got: np.ndarray, want: np.ndarray) -> None:
    report.tensors += 1
    report.cells += int(np.asarray(want).size)
    if got.shape != np.asarray(want).shape:
        report.mismatches.append(f"{where}: shape {got.shape}, oracle {np.asarray(want).shape}")
        return
    same = np.isclose(got, want, rtol=RTOL, atol=ATOL) | (
        ~np.isfinite(got) & ~np.isfinite(want) & (np.sign(got) == np.sign(want))
    )
    if not same.all():
        at = tuple(int(i) for i in np.argwhere(~same)[0]) if got.ndim else ()
        report.mismatches.append(
            f"{where}{list(at)}: run {got[at]:.6g}, oracle {np.asarray(want)[at]:.6g} "
            f"({int((~same).sum())} cells)"
        )


def check_loops(lesson: Lesson, runner: LessonRunner, report: Report) -> None:
    """Every sub-step of every loop step whose variant and stage :data:`SUBSTEPS` knows."""
    for step in lesson.steps:
        if not isinstance(step, Loop) or (step.variant, step.stage) not in SUBSTEPS:
            continue
        oracle = SUBSTEPS[(step.variant, step.stage)]
        given = _given(runner, step)  # type: ignore[arg-type]
        for sub in runner.substeps(step):
            want = oracle(given, tuple(int(i) for i in sub.position))
            for name, tensor in sub.tensors.items():
                if name in want:
                    got = tensor.detach().double().cpu().numpy()
                    where = f"{step.variant}.{step.stage}{list(sub.position)}.{name}"
                    _compare(report, where, got, np.asarray(want[name], dtype=float))


PARTNERS = {"kv-cache": "masked", "paged-kv-cache": "masked"}
"""A variant checked against another's run with the same options (see :attr:`Given.partner`)."""

ORACLES: dict[str, Callable[[Given], Arrays]] = {
    "model": model,
    "training": training,
    "induction": induction,
    "kv-cache": kv_cache,
    "naive-loop": naive,
    "vectorized": vectorized,
    "trainable": trainable,
    "masked": masked,
    "multihead-wrapper": heads_wrapper,
    "multihead": multihead,
    "sliding-window": sliding,
    "grouped-query": grouped,
    "cross-attention": cross,
    "online-softmax": causal_given,
    "backward": backward,
    "flash-backward": flash_backward,
    "rope": rope,
    "mla": mla,
    "paged-kv-cache": paged,
}


@dataclass
class Report:
    lesson: str
    tensors: int = 0
    cells: int = 0
    mismatches: list[str] = field(default_factory=list)
    without: set[str] = field(default_factory=set)
    given: set[str] = field(default_factory=set)
    """Stages that hold what a run was given (weights drawn from a seed), not computed."""
    typed: int = 0
    stale: list[str] = field(default_factory=list)


def _for_query(want: np.ndarray, shape: tuple[int, ...], query: int | None) -> np.ndarray:
    """The oracle's table as a run for one query shows it: that query's row (of each head)."""
    if query is None or want.shape == shape:
        return want
    if want.shape[1:] == shape:
        return want[query]
    if want.ndim == 3 and want[:, query].shape == shape:
        return want[:, query]
    return want


def _refs(lesson: Lesson) -> list[TensorRef]:
    refs: list[TensorRef] = []
    for step in lesson.steps:
        refs += step.tables()
        answer = getattr(step, "answer", None)
        if isinstance(answer, TensorRef):
            refs.append(answer)
    refs += [
        value.ref for value in lesson.values if isinstance(getattr(value, "ref", None), TensorRef)
    ]
    return refs


def _given(runner: LessonRunner, ref: TensorRef) -> Given:
    trace = runner.trace(ref.variant, ref.options, ref.query)
    list(trace)
    tensors = {
        stage.name: {n: t.detach().double().cpu().numpy() for n, t in stage.tensors.items()}
        for stage in trace.stages
    }
    inputs = ref.options.inputs
    assert inputs is not None
    x = np.array(inputs.embeddings, dtype=float)
    source = None
    if inputs.source_sequence is not None:
        source = np.array(inputs.source_sequence.embeddings, dtype=float)
    options = dict(runner.variant_options(ref.variant, ref.options))
    if ref.options.dropout:
        options["dropout"] = ref.options.dropout
    partner = None
    if ref.variant in PARTNERS:
        # the partner takes none of the variant's own options (paged-kv-cache's block)
        plain = dataclasses.replace(ref.options, values=(), heads=None)
        other = runner.trace(PARTNERS[ref.variant], plain, None)
        list(other)
        partner = {
            stage.name: {n: t.detach().double().cpu().numpy() for n, t in stage.tensors.items()}
            for stage in other.stages
        }
    return Given(x, source, tensors, options, ref.query, partner)


def check(lesson: Lesson, runner: LessonRunner) -> Report:
    report = Report(lesson.name)
    done: set[tuple[object, ...]] = set()
    printed: set[str] = set()
    course = np.array(seeds.SEED_003_INPUTS, dtype=float)
    for ref in _refs(lesson):
        key = (ref.variant, id(ref.options.inputs), repr(ref.options), ref.query, ref.stage)
        try:
            given = _given(runner, ref)
        except Exception as error:
            report.mismatches.append(f"{ref.variant}.{ref.stage}: the run failed: {error}")
            continue
        inputs = ref.options.inputs
        built_in = inputs is not None and inputs.name == "your-journey"
        if built_in and not np.allclose(given.x, course, atol=1e-6):
            report.mismatches.append("the built-in inputs differ from the course notes'")
        for tensors in given.tensors.values():
            for values in tensors.values():
                printed.update(f"{v:.4f}" for v in values.reshape(-1) if math.isfinite(v))
        resolved = runner.tensor(ref)
        printed.update(
            f"{v:.4f}"
            for v in resolved.tensor.detach().double().reshape(-1).tolist()
            if math.isfinite(v)
        )
        if key in done:
            continue
        done.add(key)
        oracle = ORACLES.get(ref.variant)
        if ref.stage in GIVEN.get(ref.variant, ("projections",)):
            report.given.add(f"{ref.variant}.{ref.stage}")
            continue
        if oracle is None:
            report.without.add(ref.variant)
            continue
        computed = oracle(given)
        for stage_name, derived in computed.items():
            if stage_name.startswith("_"):  # numbers the prose derives in words, recomputed here
                for values in derived.values():
                    printed.update(f"{v:.4f}" for v in np.asarray(values).reshape(-1))
        expected = computed.get(ref.stage)
        if expected is None:
            report.without.add(f"{ref.variant}.{ref.stage}")
            continue
        for name, want in expected.items():
            got = given.tensors.get(ref.stage, {}).get(name)
            if got is None:
                continue
            want = _for_query(np.asarray(want), got.shape, given.query)
            report.tensors += 1
            report.cells += int(want.size)
            if got.shape != np.asarray(want).shape:
                report.mismatches.append(
                    f"{ref.variant}.{ref.stage}.{name}: shape {got.shape}, oracle {want.shape}"
                )
                continue
            same = np.isclose(got, want, rtol=RTOL, atol=ATOL) | (
                ~np.isfinite(got) & ~np.isfinite(want) & (np.sign(got) == np.sign(want))
            )
            if not same.all():
                at = tuple(int(i) for i in np.argwhere(~same)[0])
                report.mismatches.append(
                    f"{ref.variant}.{ref.stage}.{name}{list(at)}: run {got[at]:.6g}, "
                    f"oracle {want[at]:.6g} ({int((~same).sum())} cells)"
                )
    check_loops(lesson, runner, report)
    for number in _typed_numbers(lesson):
        report.typed += 1
        if f"{float(number):.4f}" not in printed and not _rounded_in(number, printed):
            report.stale.append(number)
    return report


_TYPED = re.compile(r"(?<![\w.{])[-−]?\d+\.\d+(?![\w.]*\}\})(?!\w)")


def _typed_numbers(lesson: Lesson) -> list[str]:
    """Decimal numbers typed into the lesson's prose (live values and code left out)."""
    found = []
    for step in lesson.steps:
        for text in step.prose():
            text = re.sub(r"\{\{[^}]*\}\}", " ", text)
            text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
            found += [m.group().replace("−", "-") for m in _TYPED.finditer(text)]
    return found


def _rounded_in(number: str, printed: set[str]) -> bool:
    """Whether ``number`` (typed with fewer decimals) rounds a printed value."""
    decimals = len(number.partition(".")[2])
    return any(
        f"{float(value):.{decimals}f}" == f"{float(number):.{decimals}f}" for value in printed
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers (01 ...); default every one")
    parser.add_argument("--all", action="store_true", help="every shipped lesson")
    args = parser.parse_args(argv)
    wanted = tuple(args.lessons) or None
    host = PluginHost(use_env=False)
    false = 0
    print(
        f"{'lesson':24} {'tensors':>7} {'cells':>7} {'false':>5} {'typed':>5} {'stale':>5}  "
        "taken as the run gave them; no oracle here"
    )
    for ref in find_lessons(()):
        if wanted is not None and ref.path.name[:2] not in wanted:
            continue
        lesson = load_lesson(ref.path, host)
        runner = LessonRunner(lesson, host)
        try:
            report = check(lesson, runner)
        finally:
            runner.close()
        false += len(report.mismatches) + len(report.stale)
        print(
            f"{report.lesson:24} {report.tensors:>7} {report.cells:>7} "
            f"{len(report.mismatches):>5} {report.typed:>5} {len(report.stale):>5}  "
            f"{', '.join(sorted(report.given)) or '-'}; {', '.join(sorted(report.without)) or '-'}"
        )
        for mismatch in report.mismatches:
            print(f"    false: {mismatch}")
        for number in report.stale:
            print(f"    typed number found in no table: {number}")
    return 1 if false else 0


if __name__ == "__main__":
    raise SystemExit(main())
