"""An independent fact-check of the shipped lessons: every table a lesson shows, recomputed in
numpy from what the run was given, and every number typed into its prose found among them.

    python scripts/fact_check.py                 # lessons 01-13 and 19
    python scripts/fact_check.py 05 07           # some lessons, by number
    python scripts/fact_check.py --all           # every shipped lesson

For each table a lesson shows or asks about (a ``show``, either side of a ``compare``, a
quiz's ``show:``, ``cells:`` and ``answer``, a lesson's ``values``), the stage tensor it is
taken from is recomputed here with numpy, by the textbook formulas (scores = Q Kᵀ, scaled by
1/√d_k, a causal or a banded mask, softmax, weights @ V, heads split and joined), from the
run's *given* numbers alone: the inputs (checked against the course notes' embeddings where
they are the built-in set) and the weights a variant drew from its seed (numpy cannot draw
torch's random numbers; where a variant shows no weights, its queries, keys and values are
the given numbers and are said so). The lesson's own operations (``then:``) are checked by
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
from tracer.lessons.model import Lesson, TensorRef  # noqa: E402
from tracer.plugin_host import PluginHost  # noqa: E402

RTOL = 1e-4
ATOL = 1e-5
"""float32 arithmetic against float64: a few units in the fifth significant digit."""
NOT_CHECKED_BEFORE = ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12",
                      "13", "19")  # fmt: skip
"""Lessons 14-18 were fact-checked with their own oracles (tests/variants/*_oracles.py)."""

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


PARTNERS = {"kv-cache": "masked"}
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
        other = runner.trace(PARTNERS[ref.variant], ref.options, None)
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
        expected = oracle(given).get(ref.stage)
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
    parser.add_argument("lessons", nargs="*", help="lesson numbers (01 ...); default 01-13, 19")
    parser.add_argument("--all", action="store_true", help="every shipped lesson")
    args = parser.parse_args(argv)
    wanted = tuple(args.lessons) or (None if args.all else NOT_CHECKED_BEFORE)
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
