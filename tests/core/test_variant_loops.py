"""Loops a plugin author writes: several equations per iteration, outer-product updates,
focus by axis name, and sub-steps reachable from ``tracer.testing``.

The plugin here is causal linear attention (Katharopoulos et al., 2020) written as a
third-party author would; its oracle is the same recurrence in plain numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.core.test_variant_api import Attn, plugin
from tracer import Accumulate, Variant, stage, substep
from tracer.errors import PluginError
from tracer.inputs import load_inputs
from tracer.testing import assert_close, run_variant, substeps_of
from tracer.tui.equation_text import equation_text

LINEAR = """
    def phi(x):
        return torch.nn.functional.elu(x) + 1

    def linear(run):
        x, W = run.inputs, run.weights
        q, k, v = phi(x @ W.query), phi(x @ W.key), x @ W.value
        S = torch.zeros(k.shape[1], v.shape[1])
        z = torch.zeros(k.shape[1])
        out = torch.zeros(x.shape[0], v.shape[1])
        for i in range(x.shape[0]):
            S_before, z_before = S.clone(), z.clone()
            S = S + torch.outer(k[i], v[i])
            z = z + k[i]
            numerator = q[i] @ S
            denominator = torch.dot(q[i], z)
            out[i] = numerator / denominator
            yield substep(
                "context", (i,),
                axes={"phi_k": ("feature",), "v": ("feature",), "phi_q": ("feature",),
                      "S_before": ("feature", "feature"), "S": ("feature", "feature"),
                      "z_before": ("feature",), "z": ("feature",), "one": (),
                      "denominator": ()},
                equations=(
                    Accumulate("S_before", "phi_k", "v", "S"),
                    Accumulate("z_before", "one", "phi_k", "z"),
                    Dot("phi_q", "z", "denominator"),
                ),
                phi_k=k[i], v=v[i], phi_q=q[i], S_before=S_before, S=S.clone(),
                z_before=z_before, z=z.clone(), one=torch.tensor(1.0),
                denominator=denominator,
            )
        context = run.focus(out)
        yield stage("context", "Context", axes=("query", "feature"), context=context)
        return context

    @hookimpl
    def register_variants(register):
        register(Variant(name="linear-attention", title="Causal linear attention", run=linear,
                         stages=("context",), loops=("context",)))
    """


def linear_oracle(x: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray) -> np.ndarray:
    """Causal linear attention with φ = elu + 1, as a sum over earlier keys in numpy."""

    def phi(a: np.ndarray) -> np.ndarray:
        return np.where(a > 0, a + 1, np.exp(a))

    q, k, v = phi(x @ wq), phi(x @ wk), x @ wv
    rows = []
    for i in range(len(x)):
        weights = q[i] @ k[: i + 1].T  # φ(q_i)·φ(k_j) for j <= i
        rows.append(weights @ v[: i + 1] / weights.sum())
    return np.array(rows)


def test_an_outer_product_update_and_several_equations_per_sub_step(tmp_path: Path) -> None:
    folder = plugin(tmp_path / "p", "linear", LINEAR)
    trace = run_variant(
        "linear-attention", plugins_dir=[folder], init="randn", d_out=3, keep_substeps=True
    )
    W = trace.context.weights
    assert W is not None
    x = np.array(load_inputs("your-journey").embeddings, dtype=np.float64)
    expected = linear_oracle(
        x, W.query.double().numpy(), W.key.double().numpy(), W.value.double().numpy()
    )
    assert_close(trace.output.double(), torch.from_numpy(expected))  # type: ignore[union-attr]

    steps = substeps_of(trace, "context")
    assert [s.position for s in steps] == [(i,) for i in range(6)]
    assert len(steps[2].equations) == 3 and steps[2].equation == steps[2].equations[0]
    text = equation_text(steps[2])
    assert text is not None
    lines = text.plain.splitlines()
    assert lines[0] == "S = S_before + phi_k ⊗ v"
    # Cell [0,1] of the update is S_before[0,1] + φ(k)[0] × v[1], with the numbers that ran.
    s = steps[2].tensors
    b, w, v, a = (float(t) for t in (s["S_before"][0, 1], s["phi_k"][0], s["v"][1], s["S"][0, 1]))
    assert lines[2] == f"[0,1] {b:.4f} + {w:.4f}×{v:.4f} = {a:.4f}"
    assert "z = z_before + one × phi_k" in text.plain
    assert "denominator = phi_q · z" in text.plain


def test_a_false_outer_product_is_a_plugin_error(tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p", "linear", LINEAR.replace("S = S + torch.outer", "S = S - torch.outer")
    )
    with pytest.raises(
        PluginError, match=r"its equation does not hold: S_before \+ phi_k × v is not S"
    ):
        run_variant("linear-attention", plugins_dir=[folder], init="randn", d_out=3)


def test_an_accumulate_whose_shapes_fit_nothing_says_what_it_needs() -> None:
    def bad(run):  # type: ignore[no-untyped-def]
        yield substep(
            "s",
            (0,),
            equation=Accumulate("before", "w", "v", "after"),
            before=torch.zeros(2, 2),
            w=torch.ones(3),
            v=torch.ones(2),
            after=torch.zeros(2, 2),
        )
        yield stage("s", "S", axes=(), s=torch.tensor(0.0))
        return run.inputs

    variant = Variant(
        name="bad", title="B", run=bad, stages=("s",), loops=("s",), uses_weights=False
    )
    with pytest.raises(PluginError, match=r"got weight \(3,\), before \(2, 2\), value \(2,\)"):
        run_variant(variant)


def test_substeps_of_needs_them_kept(tmp_path: Path) -> None:
    trace = run_variant("naive-loop")
    with pytest.raises(ValueError, match="keep_substeps=True"):
        substeps_of(trace, "scores")
    kept = run_variant("naive-loop", keep_substeps=True)
    scores = substeps_of(kept, "scores")
    assert len(scores) == 36 and scores[7].position == (1, 1)
    x = kept.context.inputs
    assert float(scores[7].tensors["score"]) == pytest.approx(float(torch.dot(x[1], x[1])))
    with pytest.raises(ValueError, match="no stage 'weights' in a loop"):
        substeps_of(kept, "weights")


HEAD_FIRST = """
    def heads_first(run):
        x = run.inputs
        scores = torch.stack([x @ x.T, 2 * x @ x.T])  # (head, query, key)
        axes = ("head", "query", "key")
        yield stage("scores", "S", axes=axes, scores=run.focus(scores, axes=axes))
        shown = run.focus(scores, "query", axes=axes)
        return shown

    @hookimpl
    def register_variants(register):
        register(Variant(name="heads-first", title="H", run=heads_first, stages=("scores",),
                         uses_weights=False))
    """


def test_focus_takes_the_query_axis_by_name(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(tmp_path / "p", "heads", HEAD_FIRST)
    whole = run_variant("heads-first", plugins_dir=[folder]).stage("scores").tensors["scores"]
    focused = run_variant("heads-first", plugins_dir=[folder], query="journey")
    assert torch.equal(focused.stage("scores").tensors["scores"], whole[:, 1, :])
    assert torch.equal(focused.output, whole[:, 1, :])  # type: ignore[arg-type]
    status, out, _ = attn("trace", "heads-first", "--plugins-dir", str(folder), "--query", "1")
    assert status == 0 and "scores (2×6: head × key)" in out

    broken = plugin(
        tmp_path / "q", "heads", HEAD_FIRST.replace('"query", axes=axes', '"qeury", axes=axes')
    )
    status, _, err = attn("trace", "heads-first", "--plugins-dir", str(broken), "--query", "1")
    assert status == 3
    assert (
        "run.focus: axis 'qeury' is not among the axes ('head', 'query', 'key') "
        "(did you mean 'query'?)"
    ) in err
