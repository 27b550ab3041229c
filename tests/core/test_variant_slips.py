"""Slips a plugin author makes, each caught at the author's own line with a did-you-mean.

Each test writes the plugin a third-party author would write into a temporary
folder and runs it through ``attn`` (in-process), checking the exact line and
the exit status the author gets.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path

import pytest
import torch

from tests.core.test_variant_api import Attn, plugin, register
from tracer import Option, Variant, stage, substep
from tracer.errors import PluginError, UsageError
from tracer.testing import run_variant
from tracer.variant import OptionValues, RunContext, Step, UnknownOption


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of ``path`` containing ``text``."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_mistyped_token_axis_is_refused_at_the_yield(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "typo",
        """
        def typo(run):
            n = run.inputs.shape[0]
            yield stage("scores", "S", axes=("query", "kye"), scores=torch.zeros(n, n))
            return run.inputs
        """
        + register("typo", "typo", '("scores",)'),
    )
    status, out, err = attn("trace", "typo", "--plugins-dir", str(folder))
    line = line_of(folder / "typo.py", '"kye"')
    assert (status, out) == (3, "")
    assert err.strip().splitlines()[-1] == (
        f"{folder / 'typo.py'}:{line}: variant 'typo' stage 'scores': axis 'kye' of tensor "
        "'scores' is not a token axis (did you mean 'key'?); only key, query, source, token are "
        "labelled with tokens"
    )


def test_other_axis_names_stay_allowed(tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "custom",
        """
        def custom(run):
            yield stage("s", "S", axes=("layer", "feature"), s=torch.zeros(2, 3))
            return run.inputs
        """
        + register("custom", "custom", '("s",)'),
    )
    trace = run_variant("custom", plugins_dir=[folder])
    assert trace.stage("s").axes == {"s": ("layer", "feature")}


MISSING_STAGE = """
    def partial(run):
        yield stage("scores", "S", axes=(), scores=torch.tensor(1.0))
        return run.inputs
    """


def test_a_declared_stage_never_yielded_is_an_error_at_the_declaration(
    attn: Attn, tmp_path: Path
) -> None:
    folder = plugin(
        tmp_path / "p",
        "partial",
        MISSING_STAGE + register("partial", "partial", '("scores", "weights")'),
    )
    status, _, err = attn("trace", "partial", "--plugins-dir", str(folder))
    line = line_of(folder / "partial.py", "register(Variant(")
    assert status == 3
    assert err.strip().splitlines()[-1] == (
        f"{folder / 'partial.py'}:{line}: variant 'partial' declares stage 'weights' in stages= "
        "but never yielded it; yield it, remove it, or list it in optional_stages="
    )


def test_an_optional_stage_may_be_left_out(tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "partial",
        MISSING_STAGE
        + register("partial", "partial", '("scores", "weights")', ', optional_stages=("weights",)'),
    )
    trace = run_variant("partial", plugins_dir=[folder])
    assert [s.name for s in trace.stages] == ["scores"]


def test_an_option_whose_default_breaks_its_own_bounds_is_refused_at_its_line(
    attn: Attn, tmp_path: Path
) -> None:
    folder = plugin(
        tmp_path / "p",
        "topk",
        """
        def topk(run):
            yield stage("s", "S", axes=(), s=torch.tensor(float(run.options["k"])))
            return run.inputs
        """
        + register(
            "topk",
            "topk",
            '("s",)',
            ',\n                             options=(Option("k", int, 0, "kept", min=1),)',
        ),
    )
    status, _, err = attn("trace", "topk", "--plugins-dir", str(folder))
    line = line_of(folder / "topk.py", 'Option("k"')
    assert status != 0
    assert (f"option 'k' has default 0, below its own min=1 ({folder / 'topk.py'}:{line})") in err
    with pytest.raises(ValueError, match="default 9, above its own max=4"):
        Option("k", int, 9, max=4)


def test_an_option_whose_default_is_not_its_type_is_refused() -> None:
    with pytest.raises(ValueError, match="option 'x' has default 'a', which is not int"):
        Option("x", int, "a")
    with pytest.raises(ValueError, match="option 'flag' has default 1, which is not bool"):
        Option("flag", bool, 1)
    with pytest.raises(ValueError, match="option 'k' has default True, which is not int"):
        Option("k", int, True)
    # The same number in another spelling, and no default at all, stay as they were.
    assert Option("lr", float, 2).default == 2
    assert Option("steps", int, 50.0).default == 50.0
    assert Option("name", str, None).default is None


def test_a_mistyped_option_key_suggests_the_declared_one(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "windowed",
        """
        def windowed(run):
            w = run.options["windw"]
            yield stage("s", "S", axes=(), s=torch.tensor(float(w)))
            return run.inputs
        """
        + register(
            "windowed", "windowed", '("s",)', ', options=(Option("window", int, 2, min=1),)'
        ),
    )
    status, _, err = attn("trace", "windowed", "--plugins-dir", str(folder))
    line = line_of(folder / "windowed.py", '"windw"')
    assert status == 3
    assert err.strip().splitlines()[-1] == (
        f"{folder / 'windowed.py'}:{line}: variant 'windowed' failed: run.options has no option "
        "'windw' (did you mean 'window'?); the variant declares: window"
    )


def test_run_options_is_still_a_dict_and_a_key_error() -> None:
    context = RunContext(inputs=None, tokens=(), weights=None, extra={"window": 2})  # type: ignore[arg-type]
    assert isinstance(context.options, OptionValues) and context.options == {"window": 2}
    assert context.options.get("windw") is None  # .get and `in` behave as on any dict
    with pytest.raises(KeyError) as caught:
        context.options["windw"]
    assert isinstance(caught.value, UnknownOption)


def test_an_option_name_that_is_no_identifier_is_refused_with_a_suggestion() -> None:
    with pytest.raises(
        ValueError, match=r"option name 'my-window' .* \(did you mean 'my_window'\?\)"
    ):
        Option("my-window", int, 2)
    with pytest.raises(ValueError, match=r"option name 'Window' .* \(did you mean 'window'\?\)"):
        Option("Window", int, 2)


def test_a_keyword_option_name_is_passed_in_tests_as_a_mapping() -> None:
    def scaled(run: RunContext):  # type: ignore[no-untyped-def]
        yield stage("s", "S", axes=(), s=run.inputs.sum() * run.options["lambda"])
        return run.inputs

    variant = Variant(
        name="scaled",
        title="T",
        run=scaled,
        stages=("s",),
        uses_weights=False,
        options=(Option("lambda", float, 1.0), Option("seed_bias", float, 0.0)),
    )
    assert not variant.option("lambda").is_identifier  # type: ignore[union-attr]
    one = run_variant(variant).stage("s").tensors["s"]
    half = run_variant(variant, options={"lambda": 0.5}, seed_bias=1).stage("s").tensors["s"]
    assert half.item() == pytest.approx(one.item() * 0.5)
    with pytest.raises(UsageError, match="-o lambda must be a number, got 'x'"):
        run_variant(variant, options={"lambda": "x"})  # checked as on the command line


# One bad declaration, sub-step positions, per-tensor formulas, keyword names -----------

TWO = """
    def fine(run):
        yield stage("s", "S", axes=(), s=torch.tensor(1.0))
        return run.inputs

    @hookimpl
    def register_variants(register):
        register(Variant(name="topk", title="T", run=fine, stages=("s",), uses_weights=False,
                         options=(Option("k", int, 0, "kept", min=1),)))
        register(Variant(name="fine", title="T", run=fine, stages=("s",), uses_weights=False))
    """


def test_one_bad_option_fails_only_its_variant_with_exit_status_3(
    attn: Attn, tmp_path: Path
) -> None:
    folder = plugin(tmp_path / "p", "two", TWO)
    line = line_of(folder / "two.py", 'Option("k"')
    status, _, err = attn("trace", "fine", "--plugins-dir", str(folder))
    assert status == 0, err
    assert (
        f"attn: warning: plugin 'two': variant 'topk' failed: option 'k' has default 0, below "
        f"its own min=1 ({folder / 'two.py'}:{line})"
    ) in err.splitlines()
    status, out, err = attn("trace", "topk", "--plugins-dir", str(folder))
    assert (status, out) == (3, "")
    assert err.splitlines()[-1].endswith(
        "variant 'topk' is unavailable: plugin 'two' failed to declare it: option 'k' has "
        f"default 0, below its own min=1 ({folder / 'two.py'}:{line})"
    )


def test_a_sub_step_outside_its_stage_is_refused_at_its_yield(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "far",
        """
        def far(run):
            n = run.inputs.shape[0]
            yield substep("scores", (1, 2), score=torch.tensor(0.0))
            yield substep("scores", (100, 0), score=torch.tensor(0.0))
            yield stage("scores", "S", axes=("query", "key"), scores=torch.zeros(n, n))
            return run.inputs
        """
        + register("far", "far", '("scores",)', ', loops=("scores",)'),
    )
    status, _, err = attn("trace", "far", "--plugins-dir", str(folder), "--substeps")
    line = line_of(folder / "far.py", "(100, 0)")
    assert status == 3
    assert err.splitlines()[-1] == (
        f"{folder / 'far.py'}:{line}: variant 'far' a sub-step of 'scores': position (100, 0) "
        "is outside the stage's tensor 'scores' of shape (6, 6) and the 6 tokens (coordinate 1 "
        "is 100; it runs 0 to 5)"
    )

    def negative(run: RunContext) -> Generator[Step, None, torch.Tensor]:
        yield substep("s", (-1,), s=torch.tensor(0.0))
        return run.inputs

    variant = Variant("neg", "T", negative, ("s",), loops=("s",), uses_weights=False)
    with pytest.raises(PluginError, match=r"position \(-1,\) must be whole numbers from 0"):
        run_variant(variant)


def test_each_tensor_of_a_stage_may_have_its_own_formula(attn: Attn, tmp_path: Path) -> None:
    folder = plugin(
        tmp_path / "p",
        "masky",
        """
        def masky(run):
            n = run.inputs.shape[0]
            hidden = torch.ones(n, n).triu(1).bool()
            scores = torch.zeros(n, n).masked_fill(hidden, float("-inf"))
            yield stage("masked", "M", formula="ω' = ω, -∞ above the diagonal",
                        formulas={"mask": "M[i,j] = j > i"}, axes=("query", "key"),
                        masked=scores, mask=hidden, **{"global": scores[0]})
            return run.inputs
        """
        + register("masky", "masky", '("masked",)'),
    )
    status, out, err = attn("trace", "masky", "--plugins-dir", str(folder), "--json")
    assert status == 3  # 'global' is a row: the stage-wide axes do not fit it
    assert "tensor 'global' has 1 dimension (6,) but its axes name 2" in err
    text = (folder / "masky.py").read_text()
    (folder / "masky.py").write_text(
        text.replace('axes=("query", "key"),', 'axes={"masked": ("query", "key"), '
                     '"mask": ("query", "key"), "global": ("key",)},')
    )  # fmt: skip
    status, out, err = attn("trace", "masky", "--plugins-dir", str(folder), "--json")
    assert status == 0, err
    (masked,) = json.loads(out)["stages"]
    assert masked["formula"] == "ω' = ω, -∞ above the diagonal"
    assert masked["formulas"] == {"mask": "M[i,j] = j > i"}
    assert masked["axes"]["global"] == ["key"]
    trace = run_variant("masky", plugins_dir=[str(folder)])
    stage_ = trace.stage("masked")
    assert stage_.formula_for("masked") == "ω' = ω, -∞ above the diagonal"
    assert stage_.formula_for("mask") == "M[i,j] = j > i"
    assert stage_.formula_for("global") is None  # the stage's formula does not describe it
    (folder / "masky.py").write_text(text.replace('{"mask":', '{"mask_":'))
    status, _, err = attn("trace", "masky", "--plugins-dir", str(folder))
    assert status == 3
    assert "formulas= names 'mask_', which is not one of its tensors (masked, mask, global)" in err
