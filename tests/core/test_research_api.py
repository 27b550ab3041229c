"""What a research idea needs from the Variant API (issue: authors 4).

Whole-stage equations the tracer checks, optional options, exclusive and input-dependent
bounds, non-normalised weightings, declaration errors at load with their line, ``--init
linear`` drawn as documented, and ``--json`` carrying what an outside oracle needs. The
fixture plugins in tests/fixtures/research_plugins are written as a third-party author would.
Reference numbers come from numpy (or torch's own generator, re-drawn from the documented
recipe), never from the tracer's own output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import FIXTURES
from tracer import AddBias, Difference, Elementwise, MatMul, Option, Sum, Variant, stage
from tracer.options import check_options, describe
from tracer.testing import run_variant

Attn = Callable[..., tuple[int, str, str]]
FOLDER = FIXTURES / "research_plugins"
RESEARCH = str(FOLDER / "research.py")
SLIPS_FOLDER = FIXTURES / "declaration_slips"
SLIPS = str(SLIPS_FOLDER / "slips.py")


def trace_json(attn: Attn, *argv: str) -> dict:  # type: ignore[type-arg]
    status, out, err = attn("trace", *argv, "--plugins-dir", str(FOLDER), "--json")
    assert status == 0, err
    document: dict = json.loads(out)  # type: ignore[type-arg]
    return document


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def oracle(document: dict, cap: float = 30.0, lam: float = 0.5, k: int | None = None) -> np.ndarray:  # type: ignore[type-arg]
    """The research variant in numpy, from the embeddings, weights and bias in --json alone."""
    x = np.array(document["embeddings"], dtype=np.float64)
    w = {name: np.array(m, dtype=np.float64) for name, m in document["weights"].items()}
    q, key, v = x @ w["query"], x @ w["key"], x @ w["value"]
    scores = q @ key.T / math.sqrt(key.shape[1])
    capped = cap * np.tanh(scores / cap)
    n = x.shape[0]
    table = np.array(document["params"]["bias"], dtype=np.float64)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    biased = capped + table[j - i + n - 1]
    weights = sigmoid(biased)
    e = np.exp(biased - biased.max(axis=-1, keepdims=True))
    diff = weights - lam * e / e.sum(axis=-1, keepdims=True)
    if k is not None:
        kept = np.zeros_like(diff)
        top = np.argsort(-diff, axis=-1)[:, :k]
        np.put_along_axis(kept, top, np.take_along_axis(diff, top, -1), -1)
        diff = kept
    context: np.ndarray = diff @ v
    return context


# Whole-stage equations -------------------------------------------------------------


def test_true_stage_equations_pass_and_agree_with_numpy(attn: Attn) -> None:
    document = trace_json(attn, "research", "--init", "randn", "--d-out", "3", "-o", "k=3")
    np.testing.assert_allclose(
        np.array(document["output"]), oracle(document, k=3), rtol=1e-5, atol=1e-6
    )
    by_name = {s["name"]: s for s in document["stages"]}
    # The equation is the formula of the tensor it gives, written from the declaration.
    assert by_name["context"]["formula"] == "context = kept @ values"
    assert by_name["capped"]["formula"] == "capped = 30 × tanh(0.0333333 × scores)"
    assert by_name["diff"]["formula"] == "diff = weights − lam × softmaxed"
    assert by_name["diff"]["formulas"] == {"softmaxed": "softmaxed = softmax(biased)"}
    assert [e["kind"] for e in by_name["diff"]["equations"]] == ["Elementwise", "Difference"]
    assert by_name["biased"]["equations"][0] == {
        "kind": "AddBias",
        "x": "capped",
        "bias": "distance_bias",
        "result": "biased",
        "formula": "biased = capped + distance_bias",
    }


def test_stage_equations_hold_for_a_focused_query(attn: Attn) -> None:
    """With --query the result is a row: the equation is checked on that row of the product."""
    full = trace_json(attn, "research", "--init", "randn")
    row = trace_json(attn, "research", "--init", "randn", "--query", "2")
    np.testing.assert_allclose(np.array(row["output"]), oracle(full)[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("lie", "stage_name", "formula"),
    [
        ("matmul", "scores", "scores = queries @ keysᵀ × 1.41421"),
        ("elementwise", "capped", "capped = 30 × sigmoid(0.0333333 × scores)"),
        ("bias", "biased", "biased = capped + distance_bias"),
        ("difference", "diff", "diff = weights − lam × softmaxed"),
    ],
)
def test_a_false_stage_equation_is_refused_at_its_yield(
    attn: Attn, lie: str, stage_name: str, formula: str
) -> None:
    status, _, err = attn("trace", "research", "--plugins-dir", str(FOLDER), "-o", f"lie={lie}")
    assert status == 3
    line = _yield_line(stage_name)
    assert err.startswith(
        f"{RESEARCH}:{line}: variant 'research' stage '{stage_name}': its equation does "
        f"not hold: {formula} gives "
    ), err
    assert err.count("\n") == 1


def test_an_equation_naming_nothing_is_refused_with_the_name(attn: Attn) -> None:
    status, _, err = attn("trace", "research", "--plugins-dir", str(FOLDER), "-o", "lie=missing")
    assert status == 3
    assert (
        "names 'nowhere', which is none of its tensors, an earlier stage's tensor or a parameter"
        in err
    )
    assert f"{RESEARCH}:{_yield_line('diff')}:" in err


def _yield_line(stage_name: str) -> int:
    lines = Path(RESEARCH).read_text().splitlines()
    start = next(
        n
        for n, text in enumerate(lines, 1)
        if f'"{stage_name}",' in text and "stage(" in lines[n - 2]
    )
    return start - 1


def test_sum_and_matmul_of_vectors_in_process() -> None:
    """A vector times a matrix is a read-out (torch.matmul's rule), checked against numpy."""

    def readout(run):  # type: ignore[no-untyped-def]
        x = run.inputs
        mean = x.mean(dim=0)
        yield stage("mean", "Mean", axes=("feature",), mean=mean)
        both = mean + 2 * x[0]
        read = both @ x.T
        yield stage(
            "read",
            "Read-out",
            axes={"read": ("token",), "both": ("feature",), "first": ("feature",)},
            equations=(
                Sum("mean", "first", "both", weight=2.0),
                MatMul("both", "inputs_t", "read"),
            ),
            read=read,
            both=both,
            first=x[0],
            inputs_t=x.T,
        )
        return read

    variant = Variant(
        name="readout", title="R", run=readout, stages=("mean", "read"), uses_weights=False
    )
    trace = run_variant(variant)
    x = trace.context.inputs.double().numpy()
    np.testing.assert_allclose(
        trace.stage("read").tensors["read"].numpy(), (x.mean(0) + 2 * x[0]) @ x.T, rtol=1e-5
    )
    assert trace.stage("read").formula == "read = both @ inputs_t"


def test_equation_objects_write_their_formulas() -> None:
    assert (
        stage(
            "s", "S", equation=MatMul("q", "k", "s", transpose_b=True, scale="c"), s=torch.ones(1)
        ).formula
        == "s = q @ kᵀ × c"
    )
    assert (
        stage("s", "S", equation=Elementwise("exp", "x", "s"), s=torch.ones(1)).formula
        == "s = exp(x)"
    )
    assert (
        stage("s", "S", equation=Difference("a", "b", "s"), s=torch.ones(1)).formula == "s = a − b"
    )
    # A formula the author wrote wins over the equation's.
    assert (
        stage("s", "S", formula="mine", equation=AddBias("x", "b", "s"), s=torch.ones(1)).formula
        == "mine"
    )


# Options -----------------------------------------------------------------------------


def test_an_option_with_no_default_is_absent_unless_given(attn: Attn) -> None:
    variant = Variant(
        name="v",
        title="T",
        run=lambda run: iter(()),
        stages=("a",),
        options=(Option("k", int, None, "top k", min=1, max="tokens"),),
    )
    assert variant.option("k") is not None and variant.options[0].optional
    assert check_options(variant, {}) == {"k": None}
    assert check_options(variant, {"k": "3"}) == {"k": 3}
    assert describe(variant.options[0]) == "k (int, optional, >= 1, <= tokens): top k"
    absent = trace_json(attn, "research")
    assert absent["options"]["k"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", "cap=0"], "attn: -o cap must be above 0, got 0\n"),
        (["-o", "cap=-1.5"], "attn: -o cap must be above 0, got -1.5\n"),
        (["-o", "lam=1"], "attn: -o lam must be below 1, got 1\n"),
        (
            ["-o", "k=7"],
            "attn: option 'k' of variant 'research' must be at most tokens (6) for these inputs, "
            "got 7\n",
        ),
        (["-o", "k=4", "--inputs", "four-words"], ""),
    ],
)
def test_exclusive_and_input_bounds_are_one_line_usage_errors(
    attn: Attn, argv: list[str], message: str
) -> None:
    status, out, err = attn("trace", "research", "--plugins-dir", str(FOLDER), *argv)
    if not message:  # k = tokens is within the bound
        assert status == 0, err
        return
    assert (status, out, err) == (2, "", message)


def test_declared_bounds_are_checked_against_the_default() -> None:
    with pytest.raises(ValueError, match=r"has default 0\.0, not above its own above=0"):
        Option("cap", float, 0.0, above=0)
    with pytest.raises(ValueError, match="bound 'tokens\\*\\*2' must be a number, a size's name"):
        Option("k", int, 1, max="tokens**2")


# Declarations refused at load, at file:line -------------------------------------------


def _line_of(path: str, text: str) -> int:
    return next(n for n, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize(
    ("variant", "problem", "marker"),
    [
        ("twice", "variant 'twice' names stage 'scores' twice in stages=", 'name="twice"'),
        (
            "bad-bound",
            "option 'k' of variant 'bad-bound': max='tokns' names 'tokns', which is not a size "
            "(did you mean 'tokens'?)",
            'name="bad-bound"',
        ),
        (
            "stray-unnormalised",
            "unnormalised ['weights'] of variant 'stray-unnormalised' are not among its stages",
            'name="stray-unnormalised"',
        ),
        (
            "bad-inputs",
            "inputs= of variant 'bad-inputs' must be an InputSet (from tracer.inputs), got str",
            'name="bad-inputs"',
        ),
        (
            "bare-string",
            "stages= of variant 'bare-string' must be a tuple of names (write ('scores',) for one)",
            'name="bare-string"',
        ),
    ],
)
def test_declaration_errors_are_refused_when_the_plugin_loads(
    attn: Attn, variant: str, problem: str, marker: str
) -> None:
    status, out, err = attn("plugins", "--plugins-dir", str(SLIPS_FOLDER))
    assert status == 0
    listed = out.split("\nslips  [folder]")[1]
    assert f"  {variant}: T" not in listed  # refused, not listed as runnable
    assert f"warning: variant '{variant}' failed: {problem}" in listed
    status, _, err = attn("trace", variant, "--plugins-dir", str(SLIPS_FOLDER))
    assert status == 3
    # At the Variant(...) that declares it.
    line = _line_of(SLIPS, marker)
    if "Variant(" not in Path(SLIPS).read_text().splitlines()[line - 1]:
        line -= 1
    assert problem in err and f"({SLIPS}:{line})\n" in err


def test_a_none_return_is_reported_at_the_return_line(attn: Attn) -> None:
    status, _, err = attn("trace", "returns-none", "--plugins-dir", str(SLIPS_FOLDER))
    assert status == 3
    line = _line_of(SLIPS, "return None")
    assert err.splitlines()[-1] == (
        f"{SLIPS}:{line}: variant 'returns-none' returned NoneType; it must return the "
        "output tensor"
    )


def test_unnormalised_weightings_are_declared_and_listed(attn: Attn) -> None:
    _, out, _ = attn("plugins", "--plugins-dir", str(FOLDER), "--json")
    listed = {v["name"]: v for p in json.loads(out) for v in p["variants"]}
    assert listed["research"]["unnormalised"] == ["weights", "diff"]
    options = {o["name"]: o for o in listed["research"]["options"]}
    assert (options["cap"]["above"], options["k"]["optional"], options["k"]["max"]) == (
        0,
        True,
        "tokens",
    )
    # Its weights do not sum to 1, and nothing refuses them.
    trace = run_variant("research", plugins_dir=[FOLDER])
    sums = trace.stage("weights").tensors["weights"].sum(dim=-1)
    assert not torch.allclose(sums, torch.ones_like(sums))


# --init linear, re-drawn from the documented recipe ---------------------------------------


def test_init_linear_draws_as_the_guide_says(attn: Attn) -> None:
    """docs/plugins.md: under torch.manual_seed(seed), W_query, W_key, W_value in that order,
    each torch.rand(d_out, width) * 2 - 1 over sqrt(width), transposed to (width, d_out); the
    source's W_key, W_value after them, the same way with the source's width."""
    status, out, err = attn(
        "trace", "cross-attention", "--init", "linear", "--seed", "7", "--d-out", "3", "--json"
    )
    assert status == 0, err
    document = json.loads(out)
    d_in = len(document["embeddings"][0])
    d_source = len(document["source_embeddings"][0])
    generator = torch.Generator().manual_seed(7)

    def draw(width: int) -> np.ndarray:
        u = torch.rand(3, width, generator=generator, dtype=torch.float32).double().numpy()
        matrix: np.ndarray = ((u * 2 - 1) / math.sqrt(width)).T
        return matrix

    expected = {name: draw(d_in) for name in ("query", "key", "value")}
    source = {name: draw(d_source) for name in ("key", "value")}
    for name, matrix in expected.items():
        np.testing.assert_allclose(document["weights"][name], matrix, atol=1e-7, rtol=0)
    for name, matrix in source.items():
        np.testing.assert_allclose(document["source_weights"][name], matrix, atol=1e-7, rtol=0)


# --json: everything an outside oracle needs -------------------------------------------------


def test_json_carries_embeddings_axes_and_substep_equations(attn: Attn) -> None:
    status, out, _ = attn("trace", "cross-attention", "--json", "--query", "1", "--substeps")
    assert status == 0
    document = json.loads(out)
    from tracer.inputs.builtin import BUILTIN_INPUTS

    np.testing.assert_allclose(
        document["embeddings"], BUILTIN_INPUTS["your-journey"].embeddings, rtol=1e-6
    )
    np.testing.assert_allclose(
        document["source_embeddings"], BUILTIN_INPUTS["ton-voyage"].embeddings, rtol=1e-6
    )
    weights = next(s for s in document["stages"] if s["name"] == "weights")
    # The focused row keeps its query axis in axes; shown_axes are those of the row itself.
    assert weights["axes"]["weights"] == ["query", "key"]
    assert weights["shown_axes"]["weights"] == ["key"]
    assert np.array(weights["tensors"]["weights"]).shape == (5,)
    dots = [s for s in document["substeps"] if s["stage"] == "scores"]
    assert dots, "cross-attention's score loop yields sub-steps"
    for step in dots:
        (equation,) = step["equations"]
        assert equation["kind"] == "Dot"
        assert equation["formula"] == f"{equation['result']} = {equation['a']} · {equation['b']}"
        tensors = step["tensors"]
        product = np.dot(tensors[equation["a"]], tensors[equation["b"]])
        assert product == pytest.approx(tensors[equation["result"]], abs=1e-5)


def test_plugins_lists_parameters_source_and_inputs(attn: Attn) -> None:
    status, out, _ = attn("plugins", "--plugins-dir", str(FOLDER))
    assert status == 0
    research = _block(out, "research")
    assert "    param bias (2*tokens-1, randn): one bias per distance j - i\n" in research
    assert "    unnormalised: weights, diff (need not sum to 1)\n" in research
    assert "\n    source: required (second sequence; default: ton-voyage)\n" in _block(
        out, "cross-attention"
    )
    assert "\n    inputs: repeated-letters (" in _block(out, "induction")


def _block(out: str, variant: str) -> str:
    """A variant's lines in ``attn plugins``: its header and the indented lines under it."""
    lines = out.split(f"\n  {variant}: ")[1].splitlines()
    end = next(
        (n for n, line in enumerate(lines[1:], 1) if not line.startswith("    ")), len(lines)
    )
    return "\n".join(lines[:end]) + "\n"


def test_a_tensor_called_equation_is_still_a_tensor() -> None:
    """Plugins written before equations existed may have yielded a tensor by that name."""
    made = stage("s", "S", scores=torch.ones(2), equation=torch.zeros(2))
    assert list(made.tensors) == ["scores", "equation"]
    assert made.equations == ()


@pytest.mark.parametrize("wrong", [False, True])
def test_a_product_too_large_to_redo_is_checked_on_spread_rows(
    monkeypatch: pytest.MonkeyPatch, wrong: bool
) -> None:
    import tracer.tracing.checks as checks
    from tracer.errors import PluginError

    monkeypatch.setattr(checks, "PRODUCT_BUDGET", 0)  # every product counts as too large
    monkeypatch.setattr(checks, "SAMPLED_ROWS", 2)

    def gram(run):  # type: ignore[no-untyped-def]
        x = run.inputs
        made = x @ x.T
        if wrong:
            made = made + 1.0  # every row off: any sampled row shows it
        yield stage(
            "gram",
            "Gram",
            axes={"gram": ("query", "key"), "x": ("token", "feature")},
            equation=MatMul("x", "x", "gram", transpose_b=True),
            gram=made,
            x=x,
        )
        return made

    variant = Variant(name="gram", title="G", run=gram, stages=("gram",), uses_weights=False)
    if wrong:
        with pytest.raises(PluginError, match="its equation does not hold: gram = x @ xᵀ"):
            run_variant(variant)
    else:
        trace = run_variant(variant)
        x = trace.context.inputs.double().numpy()
        np.testing.assert_allclose(trace.output.numpy(), x @ x.T, rtol=1e-5)


def test_linear_attention_feature_map_as_checked_equations() -> None:
    """φ(x) = elu(x) + 1, then the read-out φ(q) (φ(k)ᵀ v): numpy recomputes each."""

    def linear(run):  # type: ignore[no-untyped-def]
        x, W = run.inputs, run.weights
        q, k, v = x @ W.query, x @ W.key, x @ W.value
        yield stage("values", "V", axes=("token", "feature"), values=v)
        elu_q, elu_k = torch.nn.functional.elu(q), torch.nn.functional.elu(k)
        phi_q, phi_k = elu_q + 1, elu_k + 1
        yield stage(
            "features",
            "φ(q), φ(k)",
            axes=("token", "feature"),
            equations=(
                Elementwise("elu", "q", "elu_q"),
                Sum("elu_q", 1.0, "phi_q"),
                Elementwise("elu", "k", "elu_k"),
                Sum("elu_k", 1.0, "phi_k"),
            ),
            phi_q=phi_q,
            phi_k=phi_k,
            elu_q=elu_q,
            elu_k=elu_k,
            q=q,
            k=k,
        )
        state = phi_k.T @ v
        yield stage(
            "state",
            "S",
            axes=("feature", "feature"),
            equation=MatMul("phi_k_t", "values", "state"),
            state=state,
            phi_k_t=phi_k.T,
        )
        context = phi_q @ state
        yield stage(
            "context",
            "Read-out",
            axes=("query", "feature"),
            equation=MatMul("phi_q", "state", "context"),
            context=context,
        )
        return context

    variant = Variant(
        name="linear", title="L", run=linear, stages=("values", "features", "state", "context")
    )
    trace = run_variant(variant, init="randn", d_out=3)
    x = trace.context.inputs.double().numpy()
    w = trace.context.weights
    assert w is not None
    q, k, v = (x @ m.double().numpy() for m in (w.query, w.key, w.value))

    def phi(a: np.ndarray) -> np.ndarray:
        return np.where(a > 0, a, np.exp(a) - 1) + 1

    np.testing.assert_allclose(trace.output.numpy(), phi(q) @ (phi(k).T @ v), rtol=1e-5)
    assert trace.stage("features").formulas["phi_k"] == "phi_k = elu_k + 1"


def test_the_built_in_plugins_carry_no_tooling_comments() -> None:
    """They are what learners read in the source pane: lint settings live in pyproject.toml."""
    import re

    tooling = re.compile(r"#\s*(noqa|type:\s*ignore|pragma|fmt:|pylint|mypy:|ruff:|isort:)")
    plugins = Path(__file__).parents[2] / "plugins"
    found = [
        f"{path.name}:{number}"
        for path in sorted(plugins.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if tooling.search(line)
    ]
    assert found == []
