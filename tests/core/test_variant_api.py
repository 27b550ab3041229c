"""The plugin author's API: options, axes, sub-steps, many files, checked yields, names.

Each test writes the plugin a third-party author would write into a temporary
folder and runs it through ``attn`` (in-process), checking the exact line the
author gets.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from tracer import Option, Variant, stage
from tracer.errors import UsageError
from tracer.options import check_options
from tracer.plugin_host import PluginHost
from tracer.testing import assert_stages_in_order, run_variant, sdpa_reference
from tracer.tracing.runner import TraceOptions, start_trace

Attn = Callable[..., tuple[int, str, str]]

HEADER = (
    "import torch\nfrom tracer import Accumulate, Dot, Option, Variant, hookimpl, stage, substep\n"
)


def plugin(folder: Path, name: str, body: str) -> Path:
    """Write ``folder/name.py`` with the common imports, return the folder.

    The body and the ``register(...)`` text after it are dedented separately.
    """
    folder.mkdir(exist_ok=True)
    code, marker, hook = body.partition("\n@hookimpl")
    (folder / f"{name}.py").write_text(HEADER + textwrap.dedent(code) + marker + hook)
    return folder


def register(name: str, run: str, stages: str, extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        @hookimpl
        def register_variants(register):
            register(Variant(name="{name}", title="T", run={run}, stages={stages},
                             uses_weights=False{extra}))
        """
    )


# Options -------------------------------------------------------------------

WINDOWED = """
    def windowed(run):
        w = run.options["window"]
        yield stage("shown", "Window", axes=(), shown=torch.tensor(float(w)))
        return run.inputs
    """ + register(
    "windowed",
    "windowed",
    '("shown",)',
    ', options=(Option("window", int, 2, "keys each query sees", min=1, max=50),'
    ' Option("causal", bool, True, "hide the future"),'
    ' Option("mode", str, "band", "shape", choices=("band", "strided")))',
)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", "window=0"], "attn: -o window must be at least 1, got 0"),
        (["-o", "window=51"], "attn: -o window must be at most 50, got 51"),
        (["-o", "window=two"], "attn: -o window must be a whole number, got 'two'"),
        (["-o", "causal=maybe"], "attn: -o causal must be true or false, got 'maybe'"),
        (
            ["-o", "mode=bnad"],
            "attn: -o mode: 'bnad' is not allowed (did you mean 'band'?); choose one of band, strided",
        ),
        (
            ["-o", "widow=3"],
            "attn: -o widow: variant 'windowed' has no option 'widow' (did you mean 'window'?); "
            "it takes window, causal, mode",
        ),
        (["-o", "window"], "attn: -o expects NAME=VALUE, got 'window'"),
    ],
)
def test_bad_option_values_are_usage_errors(
    attn: Attn, tmp_path: Path, argv: list[str], message: str
) -> None:
    folder = plugin(tmp_path / "p", "windowed", WINDOWED)
    status, out, err = attn("trace", "windowed", "--plugins-dir", str(folder), *argv)
    assert (status, out) == (2, "")
    assert err.strip() == message


def test_options_reach_the_variant_with_defaults(tmp_path: Path) -> None:
    folder = plugin(tmp_path / "p", "windowed", WINDOWED)
    host = PluginHost([folder], use_env=False)
    trace = start_trace("windowed", TraceOptions(options={"window": "7"}), host).run_to_end()
    assert trace.context.options == {"window": 7, "causal": True, "mode": "band"}
    assert trace.context.extra is trace.context.options  # the old spelling still works
    assert trace.stage("shown").tensors["shown"].item() == 7.0


def test_options_are_listed_by_attn_plugins(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(tmp_path / "p", "windowed", WINDOWED)
    status, out, _ = attn("plugins", "--json", "--plugins-dir", str(folder))
    assert status == 0
    listed = {p["name"]: p for p in json.loads(out)}
    options = listed["windowed"]["variants"][0]["options"]
    assert options[0] == {
        "name": "window",
        "type": "int",
        "default": 2,
        "help": "keys each query sees",
        "min": 1,
        "max": 50,
        "choices": None,
        "above": None,
        "below": None,
        "optional": False,
    }
    _, out, _ = attn("plugins", "--plugins-dir", str(folder))
    assert "    -o window (int, default 2, >= 1, <= 50): keys each query sees" in out


def test_heads_is_an_ordinary_option_with_a_shorthand(attn: Attn) -> None:
    assert attn("trace", "multihead", "--heads", "0")[2].strip() == (
        "attn: --heads must be at least 1, got 0"
    )
    assert attn("trace", "multihead", "-o", "heads=0")[2].strip() == (
        "attn: -o heads must be at least 1, got 0"
    )
    assert attn("trace", "multihead", "--heads", "1000000000")[0] == 2
    status, out, _ = attn("trace", "multihead-wrapper", "-o", "heads=3", "--json")
    assert status == 0 and json.loads(out)["options"] == {"heads": 3}


def test_a_variant_without_options_refuses_o_but_still_takes_heads(attn: Attn) -> None:
    status, _, err = attn("trace", "trainable", "-o", "window=2")
    assert (status, err.strip()) == (2, "attn: -o window: variant 'trainable' takes no options")
    assert attn("trace", "trainable", "--heads", "2")[0] == 0  # accepted before options existed


def test_an_option_cannot_shadow_a_shared_one() -> None:
    with pytest.raises(ValueError, match="'seed' of variant 'x' is a shared trace option"):
        Variant(name="x", title="x", run=print, stages=("a",), options=(Option("seed", int, 1),))  # type: ignore[arg-type]


def test_check_options_converts_lesson_values() -> None:
    variant = Variant(
        name="x",
        title="x",
        run=print,  # type: ignore[arg-type]
        stages=("a",),
        options=(Option("rate", float, 0.5, min=0), Option("on", bool, False)),
    )
    assert check_options(variant, {"rate": 1, "on": True}) == {"rate": 1.0, "on": True}
    with pytest.raises(UsageError, match=r"^lesson\.yaml:3:5: options\.on must be true or false"):
        check_options(variant, {"on": 1}, lambda name: f"lesson.yaml:3:5: options.{name}")


# Axes ----------------------------------------------------------------------


def test_feature_axes_are_never_labelled_with_tokens(attn: Attn) -> None:
    # d_out = 6 equals the number of tokens: the old guess put token names on features.
    status, out, _ = attn("trace", "trainable", "--d-out", "6", "--stages", "queries")
    assert status == 0
    lines = out.splitlines()
    header = lines[lines.index("queries (6×6: query × feature)") + 1]
    assert header.split() == ["0", "1", "2", "3", "4", "5"]
    assert lines[lines.index("queries (6×6: query × feature)") + 2].startswith("Your")


def test_json_names_every_axis_of_every_built_in(host: PluginHost) -> None:
    from tracer.render.text import trace_json

    for name in (
        "naive-loop",
        "vectorized",
        "trainable",
        "masked",
        "multihead",
        "multihead-wrapper",
    ):
        for query in (None, 1):
            document = trace_json(start_trace(name, TraceOptions(query=query), host), substeps=True)
            for step in document["stages"] + document["substeps"]:
                for tensor, axes in step["shown_axes"].items():
                    shape = np.array(step["tensors"][tensor]).shape
                    assert len(axes) == len(shape), (name, query, step.get("name"), tensor)
                    # axes keep a focused query's axis: the row it is, one name more.
                    declared = step["axes"][tensor]
                    focused = query is not None and len(declared) == len(shape) + 1
                    assert declared == axes or (focused and "query" in declared), (name, tensor)


def test_axes_that_do_not_fit_are_a_plugin_error(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "badaxes",
        """
        def badaxes(run):
            yield stage("a", "A", axes=("query", "key"), a=run.inputs.sum(1))
            return run.inputs
        """
        + register("badaxes", "badaxes", '("a",)'),
    )
    status, _, err = attn("trace", "badaxes", "--plugins-dir", str(folder))
    assert status == 3
    assert err.strip() == (
        f"{folder / 'badaxes.py'}:5: variant 'badaxes' stage 'a': tensor 'a' has 1 "
        "dimension (6,) but its axes name 2: ('query', 'key')"
    )


# Sub-steps, equations --------------------------------------------------------


def test_substeps_print_and_stages_filter(attn: Attn) -> None:
    status, out, _ = attn("trace", "naive-loop", "--query", "1", "--substeps", "--stages", "scores")
    assert status == 0
    assert out.count("-- scores [1, ") == 6 and "-- context" not in out
    assert "== stage 2/4: scores" in out and "== stage 1/4" not in out
    status, out, _ = attn("trace", "naive-loop", "--json", "--substeps", "--stages", "context")
    document = json.loads(out)
    assert [s["name"] for s in document["stages"]] == ["context"]
    assert len(document["substeps"]) == 36
    first = document["substeps"][0]
    assert first["axes"] == {
        "weight": [],
        "value": ["feature"],
        "before": ["feature"],
        "partial": ["feature"],
    }


def test_unknown_stage_in_stages_filter(attn: Attn) -> None:
    status, _, err = attn("trace", "masked", "--stages", "wieghts")
    assert status == 2
    assert err.strip().startswith(
        "attn: --stages: variant 'masked' has no stage 'wieghts' (did you mean 'weights'?)"
    )


def test_naive_loop_declares_true_equations(host: PluginHost) -> None:
    from tracer.variant import Accumulate, Dot, SubStep

    trace = start_trace("naive-loop", TraceOptions(), host)
    seen = set()
    for step in trace:
        if isinstance(step, SubStep):
            seen.add(type(step.equation))
            if isinstance(step.equation, Accumulate):
                t = step.tensors
                expected = t["before"] + t["weight"] * t["value"]
                torch.testing.assert_close(t["partial"], expected)
    assert seen == {Dot, Accumulate}


def test_a_false_equation_is_a_plugin_error(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "liar",
        """
        def liar(run):
            x = run.inputs
            for j in range(2):
                yield substep("a", (0, j), equation=Dot("q", "k", "s"), q=x[0], k=x[j], s=x[0, 0])
            yield stage("a", "A", a=x)
            return x
        """
        + register("liar", "liar", '("a",)', ', loops=("a",)'),
    )
    status, _, err = attn("trace", "liar", "--plugins-dir", str(folder))
    assert status == 3
    assert err.strip() == (
        f"{folder / 'liar.py'}:7: variant 'liar' a sub-step of 'a': its equation does not "
        "hold: q · k = 0.9995, not 0.4300"
    )


# Checked yields ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("[1.0, 2.0]", "is a list; yield a torch tensor (or a plain number)"),
        ("None", "is None; yield a torch tensor (or a plain number)"),
        (
            "torch.ones(2, dtype=torch.complex64)",
            "is complex (torch.complex64); yield its real part, imaginary part or abs()",
        ),
        (
            "torch.ones(2).to_sparse()",
            "is a torch.sparse_coo tensor; yield a dense one (.to_dense())",
        ),
        ("torch.empty(2, device='meta')", "is a meta tensor, which has no values to show"),
    ],
)
def test_yields_that_cannot_be_shown(attn: Attn, tmp_path: Path, value: str, problem: str) -> None:
    folder = plugin(
        tmp_path / "p",
        "odd",
        f"""
        def odd(run):
            yield stage("a", "A", x={value})
            return run.inputs
        """
        + register("odd", "odd", '("a",)'),
    )
    status, _, err = attn("trace", "odd", "--plugins-dir", str(folder))
    assert status == 3 and "Traceback" not in err
    assert err.strip() == f"{folder / 'odd.py'}:5: variant 'odd' stage 'a': tensor 'x' {problem}"


def test_a_plain_number_is_shown_as_a_0d_tensor(tmp_path: Path) -> None:
    def numbers(run):  # type: ignore[no-untyped-def]
        yield stage("a", "A", half=0.5, count=3)
        return run.inputs

    trace = run_variant(
        Variant(name="numbers", title="N", run=numbers, stages=("a",), uses_weights=False)
    )
    tensors = trace.stage("a").tensors
    assert tensors["half"].dim() == 0 and tensors["half"].item() == 0.5
    assert tensors["count"].item() == 3


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            'yield stage("a", "A", x=run.inputs)\n    yield stage("a", "A", x=run.inputs)',
            "yielded stage 'a' twice",
        ),
        (
            'yield substep("a", (0,), x=run.inputs)',
            "yielded a sub-step of 'a', which it does not declare in loops=[]",
        ),
        (
            'yield stage("b", "B", x=run.inputs)',
            "yielded stage 'b', which it does not declare in stages=['a']",
        ),
    ],
)
def test_steps_out_of_the_declared_order(
    attn: Attn, tmp_path: Path, body: str, problem: str
) -> None:
    folder = plugin(
        tmp_path / "p",
        "order",
        f"def order(run):\n    {body}\n    return run.inputs\n"
        + register("order", "order", '("a",)'),
    )
    status, _, err = attn("trace", "order", "--plugins-dir", str(folder))
    assert status == 3
    assert err.strip().endswith(f"variant 'order' {problem}")
    assert err.startswith(f"{folder / 'order.py'}:")


# Many files -----------------------------------------------------------------------


def test_folder_plugin_imports_a_helper_and_its_lines_are_recorded(
    attn: Attn, tmp_path: Path
) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "_helpers.py").write_text("def double(x):\n    doubled = x * 2\n    return doubled\n")
    plugin(
        folder,
        "twice",
        """
        from . import _helpers
        import _helpers as same

        def twice(run):
            y = _helpers.double(run.inputs)
            yield stage("a", "A", axes=("token", "feature"), a=y)
            return same.double(y)
        """
        + register("twice", "twice", '("a",)'),
    )
    host = PluginHost([folder], use_env=False)
    assert [r.name for r in host.plugins if r.origin == "folder"] == [
        "twice"
    ]  # _helpers is no plugin
    trace = start_trace("twice", TraceOptions(), host).run_to_end()
    files = trace.stage("a").files
    assert files[str(folder / "_helpers.py")] == (2, 3)
    assert trace.stage("a").source_file == str(folder / "twice.py")
    torch.testing.assert_close(trace.output, trace.context.inputs * 4)


# Names --------------------------------------------------------------------------------


def test_built_ins_keep_their_names(attn: Attn, tmp_path: Path, host: PluginHost) -> None:
    folder = plugin(
        tmp_path / "p",
        "impostor",
        """
        def zeros(run):
            yield stage("context", "C", context=torch.zeros(6, 2))
            return torch.zeros(6, 2)

        @hookimpl
        def register_variants(register):
            register(Variant(name="masked", title="Fake", run=zeros, stages=("context",)))
            register(Variant(name="zeros", title="Zeros", run=zeros, stages=("context",)))
        """,
    )
    mine = PluginHost([folder], use_env=False)
    assert mine.owner["masked"].origin == "built-in"
    assert mine.owner["zeros"].name == "impostor"
    assert not mine.failures
    assert mine.owner["zeros"].warnings == [
        "variant 'masked' is reached as 'impostor:masked': the name 'masked' belongs to "
        "built-in plugin 'masked'"
    ]
    real = start_trace("masked", TraceOptions(), host).run_to_end().output
    assert torch.equal(start_trace("masked", TraceOptions(), mine).run_to_end().output, real)
    status, _, err = attn("trace", "zeros", "--plugins-dir", str(folder))
    assert status == 0
    assert (
        "attn: warning: plugin 'impostor': variant 'masked' is reached as 'impostor:masked'" in err
    )
    # The refused name is reachable by its plugin's name, as `attn plugins` lists both.
    status, out, _ = attn("trace", "impostor:masked", "--plugins-dir", str(folder))
    assert status == 0 and out.startswith("masked: Fake\n")
    theirs = start_trace("impostor:masked", TraceOptions(), mine).run_to_end().output
    assert torch.equal(theirs, torch.zeros(6, 2))
    assert torch.equal(start_trace("masked:masked", TraceOptions(), mine).run_to_end().output, real)
    status, out, _ = attn("plugins", "--json", "--plugins-dir", str(folder))
    listed = {p["name"]: p for p in json.loads(out)}
    assert [v["name"] for v in listed["impostor"]["variants"]] == ["impostor:masked", "zeros"]


def test_a_square_token_table_without_axes_keeps_token_labels_with_a_hint(
    attn: Attn, tmp_path: Path
) -> None:
    folder = plugin(
        tmp_path / "p",
        "old",
        """
        def old(run):
            x = run.inputs
            yield stage("scores", "S", scores=x @ x.T, gram=x @ x.T)
            return x
        """
        + register("old", "old", '("scores",)'),
    )
    status, out, _ = attn("trace", "old", "--plugins-dir", str(folder))
    assert status == 0
    lines = out.splitlines()
    scores = lines.index("scores (6×6: query × key)")
    assert lines[scores + 1].split() == ["Your", "journey", "starts", "with", "one", "step"]
    assert lines[scores + 2].startswith("Your ")
    assert lines[scores + 8] == (
        "(tensor 'scores' names no axes; labelled with the tokens because it is a tokens × "
        'tokens table: declare axes=("query", "key") in its stage)'
    )
    # Tokens × tokens too, but not called a score, weight or mask table: indices, no hint.
    gram = lines.index("gram (6×6)")
    assert lines[gram + 1].split() == ["0", "1", "2", "3", "4", "5"]
    assert "tensor 'gram'" not in out


# Copy-on-write -------------------------------------------------------------------------


def test_sub_step_grad_and_numpy_writes_do_not_reach_recorded_tensors(tmp_path: Path) -> None:
    def writer(run):  # type: ignore[no-untyped-def]
        running = torch.zeros(3)
        for i in range(3):
            running += 1  # in place, after the previous sub-step recorded it
            yield substep_("a", (i,), running=running)
        w = torch.ones(2, requires_grad=True)
        (w * 3).sum().backward()
        yield stage("a", "A", grad=w.grad)
        (w * 2).sum().backward()  # autograd accumulates into the same .grad storage
        view = w.grad.numpy()
        yield stage("b", "B", grad=w.grad)
        view[:] = 100.0  # a write through numpy, after the stage recorded it
        return w.grad

    from tracer import substep as substep_

    variant = Variant(
        name="w", title="W", run=writer, stages=("a", "b"), loops=("a",), uses_weights=False
    )
    from tracer.inputs import load_inputs
    from tracer.tracing import Trace
    from tracer.tracing.runner import build_context

    trace = Trace(
        variant, build_context(load_inputs("your-journey"), TraceOptions(), variant=variant)
    )
    kept = [step for step in trace]
    assert [s.tensors["running"][0].item() for s in kept[:3]] == [1.0, 2.0, 3.0]
    assert trace.stage("a").tensors["grad"].tolist() == [3.0, 3.0]
    assert trace.stage("b").tensors["grad"].tolist() == [5.0, 5.0]


# Containment ------------------------------------------------------------------------------


def test_a_plugin_changing_torch_defaults_at_import_is_put_back(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "float64",
        """
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        print("chatty import")
        """
        + "\n@hookimpl\ndef register_variants(register):\n    pass\n",
    )
    status, out, err = attn("trace", "trainable", "--json", "--plugins-dir", str(folder))
    assert status == 0
    json.loads(out)  # the plugin's print went to stderr, not into the JSON
    assert "chatty import" in err
    assert "plugin 'float64': changed torch's default dtype, grad mode at import; put back" in err
    assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()


@pytest.mark.parametrize(
    ("call", "summary"),
    [
        ("import os; os._exit(0)", "called os._exit(0)"),
        ("import sys; sys.exit(0)", "called sys.exit(0)"),
    ],
)
def test_a_plugin_that_exits_while_running_is_reported(
    attn: Attn, tmp_path: Path, call: str, summary: str
) -> None:
    folder = plugin(
        tmp_path / "p",
        "quitter",
        f"""
        def quitter(run):
            yield stage("a", "A", a=run.inputs)
            {call}
            return run.inputs
        """
        + register("quitter", "quitter", '("a",)'),
    )
    status, _, err = attn("trace", "quitter", "--plugins-dir", str(folder))
    assert status == 3
    assert err.strip() == f"{folder / 'quitter.py'}:6: variant 'quitter' failed: {summary}"


# tracer.testing ---------------------------------------------------------------------------------


def test_testing_helpers_run_a_variant_like_attn_does() -> None:
    trace = run_variant("trainable", init="randn", d_out=3, seed=1)
    assert_stages_in_order(trace)
    torch.testing.assert_close(trace.output, sdpa_reference(trace), atol=1e-5, rtol=1e-5)
    with pytest.raises(UsageError, match="heads must be at least 1"):
        run_variant("multihead", heads=0)


async def test_the_app_says_when_token_labels_come_from_the_shape(tmp_path: Path) -> None:
    from tests.tui.conftest import settle
    from tracer.tui.explore_screen import ExploreScreen
    from tracer.tui.launch import make_explore_app
    from tracer.tui.text_pane import TextPane

    folder = plugin(
        tmp_path / "p",
        "old",
        """
        def old(run):
            x = run.inputs
            yield stage("scores", "S", scores=x @ x.T)
            return x
        """
        + register("old", "old", '("scores",)'),
    )
    app = make_explore_app("old", TraceOptions(), [str(folder)])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        narration = str(screen.query_one("#narration", TextPane).render())
        assert "tensor 'scores' names no axes; labelled with the tokens" in narration


# A second sequence by default ----------------------------------------------------------------

READS_SOURCE = """
    def reads(run):
        source = run.source
        yield stage("src", "Source", axes=("source", "feature"), src=source.inputs)
        return source.inputs.sum(dim=0)

    def ignores(run):
        yield stage("has", "Has a source", axes=(), has=torch.tensor(float(run.source is not None)))
        return run.inputs
    """


def source_plugin(tmp_path: Path, extra: str) -> Path:
    return plugin(
        tmp_path / "p",
        "reads",
        READS_SOURCE
        + register("reads", "reads", '("src",)', extra)
        + "    register(Variant(name='ignores', title='T', run=ignores, stages=('has',)))\n",
    )


def test_a_variant_that_requires_a_source_gets_the_default_one(attn: Attn, tmp_path: Path) -> None:
    from tracer.inputs import load_inputs

    folder = source_plugin(tmp_path, ', source="required"')
    status, out, err = attn("trace", "reads", "--json", "--plugins-dir", str(folder))
    assert status == 0, err
    document = json.loads(out)
    default = load_inputs("ton-voyage")
    assert document["source_tokens"] == list(default.tokens)
    assert document["source_default"] == "ton-voyage"
    np.testing.assert_allclose(
        document["stages"][0]["tensors"]["src"], default.embeddings, rtol=1e-6
    )
    # A variant that does not say so runs as before: no source unless the inputs give one.
    ignores = run_variant("ignores", plugins_dir=[folder])
    assert ignores.context.source is None and ignores.stage("has").tensors["has"].item() == 0.0
    given = run_variant("ignores", plugins_dir=[folder], source="four-words")
    assert given.stage("has").tensors["has"].item() == 1.0


def test_a_variant_names_its_own_default_source(tmp_path: Path) -> None:
    folder = source_plugin(tmp_path, ', source="required", default_source="four-words"')
    source = run_variant("reads", plugins_dir=[folder]).context.source
    assert source is not None and source.default == "four-words"
    assert source.tokens == ("word_1", "word_2", "word_3", "word_4")
    assert source.weights is None  # uses_weights=False: only the tokens and embeddings

    from tracer.inputs import InputSet

    own = InputSet(name="mine", tokens=("a", "b"), embeddings=((1.0, 2.0), (3.0, 4.0)))

    def reads(run):  # type: ignore[no-untyped-def]
        yield stage("src", "Source", axes=("source", "feature"), src=run.source.inputs)
        return run.source.inputs

    variant = Variant(
        name="own",
        title="T",
        run=reads,
        stages=("src",),
        source="required",
        default_source=own,
    )
    trace = run_variant(variant)
    assert trace.context.source is not None and trace.context.source.tokens == ("a", "b")
    assert trace.context.source.weights is not None  # drawn, (source width 2, d_out 2)
    assert trace.context.source.weights.key.shape == (2, 2)
    assert trace.stage("src").tensors["src"].tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ', source="requried"',
            "source='requried' of variant 'reads' must be 'required' or None "
            "(did you mean 'required'?)",
        ),
        (
            ', default_source="four-words"',
            "variant 'reads' gives default_source= but not source='required'",
        ),
        (
            ', source="required", default_source="four-word"',
            "default_source 'four-word' of variant 'reads' is not a built-in input set "
            "(did you mean 'four-words'?); built-in sets: four-words, ton-voyage, your-journey",
        ),
    ],
)
def test_a_source_slip_is_refused_at_the_variant_line(
    attn: Attn, tmp_path: Path, extra: str, message: str
) -> None:
    folder = source_plugin(tmp_path, extra)
    status, _, err = attn("trace", "reads", "--plugins-dir", str(folder))
    line = next(
        n
        for n, text in enumerate((folder / "reads.py").read_text().splitlines(), 1)
        if 'name="reads"' in text
    )
    assert status != 0
    assert f"{message} ({folder / 'reads.py'}:{line})" in err
