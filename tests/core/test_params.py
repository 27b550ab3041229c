"""Learnt parameters beyond W_q, W_k, W_v, and what a plugin author's inputs file can give.

``Variant(params=(Param(...),))`` declares them; an inputs file gives them in ``params:``
(checked against the declaration at the file's own line and column) or the tool draws
them from the seed, and ``attn trace --json`` carries everything an outside oracle needs
to rerun the trace. The oracles here are plain torch calls under ``torch.manual_seed``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.core.test_variant_api import Attn, plugin
from tracer import Param, Variant, stage
from tracer.errors import InputError
from tracer.inputs import load_inputs
from tracer.testing import run_variant

BIASED = """
    from tracer import Param

    def biased(run):
        x, W = run.inputs, run.weights
        scores = (x @ W.query) @ (x @ W.key).T + run.params["bias"]
        yield stage("scores", "S", axes=("query", "key"), scores=run.focus(scores))
        weights = run.dropout_weights(torch.softmax(run.focus(scores), dim=-1))
        context = weights @ (x @ W.value) @ run.params["out"]
        yield stage("context", "C", axes=("query", "feature"), context=context)
        return context

    @hookimpl
    def register_variants(register):
        register(Variant(name="biased", title="T", run=biased, stages=("scores", "context"),
                         params=(Param("bias", ("tokens", "tokens"), "randn"),
                                 Param("out", ("d_out", 4)))))
    """


@pytest.fixture(scope="module")
def biased(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("biased")
    return plugin(folder, "biased", BIASED)


def test_parameters_the_inputs_leave_out_are_drawn_after_the_weights(biased: Path) -> None:
    trace = run_variant("biased", plugins_dir=[str(biased)], seed=7, d_out=2)
    torch.manual_seed(7)
    weights = [torch.rand(3, 2) for _ in range(3)]
    bias, out = torch.randn(6, 6), torch.rand(2, 4)
    torch.testing.assert_close(trace.context.weights.query, weights[0])
    torch.testing.assert_close(trace.context.params["bias"], bias)
    torch.testing.assert_close(trace.context.params["out"], out)
    x = trace.context.inputs
    scores = (x @ weights[0]) @ (x @ weights[1]).T + bias
    expected = torch.softmax(scores, dim=-1) @ (x @ weights[2]) @ out
    torch.testing.assert_close(trace.output, expected)


def test_inputs_give_parameters_by_name_and_shape(biased: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "given.yaml"
    inputs.write_text(
        "tokens: [a, b]\nembeddings: [[1, 0], [0, 1]]\nparams:\n  bias: [[0, 1], [2, 3]]\n"
    )
    trace = run_variant("biased", plugins_dir=[str(biased)], inputs=str(inputs), seed=3)
    torch.testing.assert_close(trace.context.params["bias"], torch.tensor([[0.0, 1], [2, 3]]))
    # 'out' is drawn as if 'bias' were drawn too: the same whether or not 'bias' is given.
    torch.manual_seed(3)
    [torch.rand(2, 2) for _ in range(3)]
    torch.randn(2, 2)
    torch.testing.assert_close(trace.context.params["out"], torch.rand(2, 4))
    assert trace.context.params.inits == {"bias": "inputs", "out": "rand"}


def test_a_parameter_of_the_wrong_shape_is_refused_at_its_values(
    attn: Attn, biased: Path, tmp_path: Path
) -> None:
    inputs = tmp_path / "wrong.yaml"
    inputs.write_text(
        "tokens: [a, b]\nembeddings: [[1, 0], [0, 1]]\nparams:\n  bias: [1, 2, 3]\n  bais: 1\n"
    )
    status, out, err = attn(
        "trace", "biased", "--plugins-dir", str(biased), "--inputs", str(inputs)
    )
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"{inputs}:5:3: params.bais: variant 'biased' declares no parameter 'bais' "
        "(did you mean 'bias'?); it declares: bias, out"
    )
    inputs.write_text("tokens: [a, b]\nembeddings: [[1, 0], [0, 1]]\nparams:\n  bias: [1, 2, 3]\n")
    status, out, err = attn(
        "trace", "biased", "--plugins-dir", str(biased), "--inputs", str(inputs)
    )
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"{inputs}:4:9: params.bias is 3 but variant 'biased' declares (tokens, tokens) = 2×2 "
        "for these inputs"
    )


def test_trace_json_carries_what_an_oracle_needs(attn: Attn, biased: Path) -> None:
    status, out, err = attn(
        "trace", "biased", "--plugins-dir", str(biased), "--json", "--seed", "11",
        "--init", "randn", "--d-out", "3",
    )  # fmt: skip
    assert status == 0, err
    document = json.loads(out)
    assert (document["seed"], document["init"], document["d_out"]) == (11, "randn", 3)
    assert document["param_inits"] == {"bias": "randn", "out": "randn"}
    torch.manual_seed(11)
    for name in ("query", "key", "value"):
        np.testing.assert_allclose(document["weights"][name], torch.randn(3, 3), rtol=1e-6)
    np.testing.assert_allclose(document["params"]["bias"], torch.randn(6, 6), rtol=1e-6)
    np.testing.assert_allclose(document["params"]["out"], torch.randn(3, 4), rtol=1e-6)


def test_a_param_declaration_names_only_sizes_it_can_know() -> None:
    def run(run):  # type: ignore[no-untyped-def]
        yield stage("s", "S", s=run.inputs)
        return run.inputs

    with pytest.raises(ValueError, match=r"'tokns' is not a size \(did you mean 'tokens'\?\)"):
        Variant("v", "T", run, ("s",), params=(Param("p", ("tokns",)),))
    with pytest.raises(ValueError, match="has init 'randm' \\(did you mean 'rand'\\?\\)"):
        Param("p", (2,), "randm")
    with pytest.raises(ValueError, match="dimension '2\\*\\*tokens'"):
        Param("p", ("2**tokens",))
    assert Param("p", ("2*tokens-1", "d_out")).resolve({"tokens": 6, "d_out": 2}) == (11, 2)


def test_json_inputs_read_their_source_as_yaml_does(tmp_path: Path) -> None:
    document = {
        "tokens": ["Le", "chat"],
        "embeddings": [[0.1, 0.2], [0.3, 0.4]],
        "weights": {"query": [[1, 0], [0, 1]]},
        "source": {
            "tokens": ["The", "cat", "sat"],
            "embeddings": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
            "weights": {"key": [[1, 0], [0, 1], [1, 1]], "value": [[2, 0], [0, 2], [1, 0]]},
        },
        "params": {"gate": [0.5, 0.25]},
    }
    (tmp_path / "two.json").write_text(json.dumps(document))
    (tmp_path / "two.yaml").write_text(json.dumps(document))  # JSON is YAML
    from_json, from_yaml = (
        load_inputs(str(tmp_path / "two.json")),
        load_inputs(str(tmp_path / "two.yaml")),
    )
    assert from_json.source_sequence is not None
    assert from_json.source_sequence == from_yaml.source_sequence
    assert from_json.params == from_yaml.params
    assert from_json.source_sequence.tokens == ("The", "cat", "sat")


def test_source_weights_need_the_main_query_weights(tmp_path: Path) -> None:
    # d_out is the queries': source weights alone would leave W_query drawn at random beside
    # matrices the file gives, so they are refused (exit 2) at the section.
    inputs = tmp_path / "cross.yaml"
    inputs.write_text(
        "tokens: [Le, chat]\nembeddings: [[0.1, 0.2], [0.3, 0.4]]\n"
        "source:\n  tokens: [The, cat, sat]\n  embeddings: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n"
        "  weights:\n    key: [[1, 0], [0, 1], [1, 1]]\n    value: [[2, 0], [0, 2], [1, 0]]\n"
    )
    with pytest.raises(InputError) as caught:
        load_inputs(str(inputs))
    assert caught.value.exit_status == 2
    assert str(caught.value) == (
        f"{inputs}:7:5: source.weights needs the main 'weights' too: the queries come from the "
        "main sequence, so its query weights must be given with them (weights: {query: ...})"
    )
    # With the main query alone (key and value of the main sequence drawn), it runs.
    inputs.write_text(
        inputs.read_text().replace("source:", "weights:\n  query: [[1, 0], [0, 1]]\nsource:")
    )
    trace = run_variant("cross-attention", inputs=str(inputs), seed=5)
    x, source = trace.context.inputs, trace.context.source
    assert source is not None and source.weights is not None
    keys = source.inputs @ torch.tensor([[1.0, 0], [0, 1], [1, 1]])
    values = source.inputs @ torch.tensor([[2.0, 0], [0, 2], [1, 0]])
    expected = torch.softmax(x @ keys.T / 2**0.5, dim=-1) @ values  # W_query = identity
    torch.testing.assert_close(trace.output, expected)


def test_a_public_dropout_drops_what_the_built_ins_drop() -> None:
    from tracer.dropout import dropout

    full = run_variant("masked", dropout=0.5, seed=9)
    focused = run_variant("masked", dropout=0.5, seed=9, query=2)
    before = full.stage("weights").tensors["weights"]
    dropped = full.stage("dropout").tensors["weights"]
    torch.testing.assert_close(dropped, dropout(before, 0.5, 9))
    torch.testing.assert_close(focused.context.dropout_weights(before[2]), dropped[2])
    assert int((dropped == 0).sum()) > 0


def test_the_inputs_package_has_no_import_cycle() -> None:
    folder = Path(__file__).parents[2] / "tracer" / "inputs"
    edges: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):  # function-local imports too
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        edges[f"tracer.inputs.{path.stem}"] = {
            name for name in imported if name.startswith("tracer.inputs.")
        }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for step in edges.get(start, ()):
            if step == goal or (step not in seen and reaches(step, goal, seen | {step})):
                return True
        return False

    assert [name for name in edges if reaches(name, name, set())] == []


def test_a_bad_param_fails_only_its_variant(tmp_path: Path) -> None:
    from tracer.errors import PluginError
    from tracer.plugin_host import PluginHost

    folder = plugin(
        tmp_path / "p",
        "pair",
        """
        from tracer import Param

        def fine(run):
            yield stage("s", "S", axes=(), s=torch.tensor(1.0))
            return run.inputs

        @hookimpl
        def register_variants(register):
            register(Variant(name="gated", title="T", run=fine, stages=("s",),
                             params=(Param("gate", ("tokns",)),)))
            register(Variant(name="plain-one", title="T", run=fine, stages=("s",)))
        """,
    )
    host = PluginHost([folder], use_env=False)
    assert "plain-one" in host.variants
    with pytest.raises(PluginError) as caught:
        host.variant("gated")
    line = next(
        n
        for n, text in enumerate((folder / "pair.py").read_text().splitlines(), 1)
        if 'Variant(name="gated"' in text
    )
    assert str(caught.value).endswith(
        "variant 'gated' is unavailable: plugin 'pair' failed to declare it: parameter 'gate' "
        "of variant 'gated': 'tokns' is not a size (did you mean 'tokens'?); use tokens, d_in, "
        f"d_out, source_tokens, d_source or one of the variant's int options ({folder / 'pair.py'}:{line})"
    )


def test_strict_plugins_refuse_a_variant_that_failed_to_declare(tmp_path: Path) -> None:
    from tracer.errors import PluginError
    from tracer.plugin_host import PluginHost

    folder = plugin(
        tmp_path / "p",
        "lone",
        """
        def fine(run):
            yield stage("s", "S", axes=(), s=torch.tensor(1.0))
            return run.inputs

        @hookimpl
        def register_variants(register):
            register(Variant(name="lone", title="T", run=fine, stages=("s",),
                             options=(Option("Width", int, 2),)))
        """,
    )
    with pytest.raises(PluginError, match=r"failed to declare variant 'lone': option name 'Width'"):
        PluginHost([folder], use_env=False, strict=True)
