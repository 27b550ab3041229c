"""The Stepper: numbering, stepping back past its window by replaying, and the loop canvas.

Reference values come from torch itself (``torch.dot``) and from seed 001's
printed scores for "Your journey starts with one step".
"""

from __future__ import annotations

import pytest
import torch

from tracer.inputs import load_inputs
from tracer.plugin_host import PluginHost
from tracer.tracing import VariantRunError
from tracer.tracing.runner import TraceOptions, build_context
from tracer.tracing.stepper import Stepper
from tracer.variant import Stage, SubStep

from .conftest import PLUGINS


def naive_stepper(host: PluginHost, window: int = 4096, query: int | None = None) -> Stepper:
    context = build_context(
        load_inputs("your-journey"), TraceOptions(query=query), uses_weights=False
    )
    return Stepper(lambda: host.start("naive-loop", context), window=window)


def test_steps_are_numbered_in_the_order_the_variant_yields_them(host: PluginHost) -> None:
    stepper = naive_stepper(host)
    assert stepper.last() == 75  # 1 + 36 sub-steps + 1 + 1 + 36 sub-steps + 1 = 76 steps
    names = [stepper.stages[n].name for n in stepper.stage_numbers]
    assert names == ["inputs", "scores", "weights", "context"]
    assert stepper.stage_numbers == [0, 37, 38, 75]
    first = stepper.get(1)
    assert isinstance(first, SubStep) and first.position == (0, 0) and first.index == 0
    with pytest.raises(IndexError):
        stepper.get(76)


def test_stepping_back_past_the_window_replays_the_same_steps(host: PluginHost) -> None:
    stepper = naive_stepper(host, window=4)
    forward = {}
    for index in range(1, 30):
        step = stepper.get(index)
        assert isinstance(step, SubStep)
        forward[index] = (step.position, float(step.tensors["score"]))
    assert stepper.replays == 0
    # 26 is still in the window of four; 5 is not, so it is recomputed.
    assert (stepper.get(26).position, stepper.replays) == (forward[26][0], 0)  # type: ignore[union-attr]
    again = stepper.get(5)
    assert stepper.replays == 1
    assert isinstance(again, SubStep)
    assert (again.position, float(again.tensors["score"])) == forward[5]
    # The replay refilled the window with the steps before 5: walking back costs nothing more.
    for index in (4, 3, 2):
        assert stepper.get(index).position == forward[index][0]  # type: ignore[union-attr]
    assert stepper.replays == 1
    assert len(stepper._recent) <= 4


def tiny_stepper() -> Stepper:
    host = PluginHost([str(PLUGINS)])
    context = build_context(load_inputs("your-journey"), TraceOptions(), uses_weights=False)
    return Stepper(lambda: host.start("tiny", context))


def test_the_loop_canvas_holds_each_dot_product_as_of_a_sub_step() -> None:
    # The test plugin's loop declares equation=Dot("query", "key", "score").
    stepper = tiny_stepper()
    stepper.get(36)  # the last sub-step of the scores loop
    canvas = stepper.canvases["scores"]
    inputs = torch.tensor(load_inputs("your-journey").embeddings)
    for i in range(6):
        for j in range(6):
            value = canvas.value(i, j, upto=35)
            assert value == pytest.approx(float(torch.dot(inputs[i], inputs[j])), abs=1e-6)
    # Seed 001: the score of "Your" with "journey" is 0.9544.
    assert canvas.value(0, 1, upto=35) == pytest.approx(0.9544, abs=5e-5)
    # As of sub-step 7 (row 1, column 1), later cells are still empty.
    assert canvas.value(1, 1, upto=7) is not None
    assert canvas.value(1, 2, upto=7) is None


def test_only_a_declared_dot_product_fills_a_canvas(host: PluginHost) -> None:
    # naive-loop's context loop multiplies a weight into a vector: its single numbers are
    # weights, not cells of the context tensor, so no matrix may be drawn from them.
    stepper = naive_stepper(host)
    stepper.last()
    assert "context" not in stepper.canvases


def test_a_plugin_calling_sys_exit_ends_its_trace_not_the_program() -> None:
    host = PluginHost([str(PLUGINS)])
    context = build_context(load_inputs("your-journey"), TraceOptions(), uses_weights=False)
    stepper = Stepper(lambda: host.start("exits", context))
    assert isinstance(stepper.get(0), Stage)
    with pytest.raises(IndexError):
        stepper.get(1)
    assert stepper.error is not None and "called sys.exit(0)" in str(stepper.error)
    assert stepper.error.exit_status == 3


def test_next_stage_is_the_end_of_the_current_loop(host: PluginHost) -> None:
    stepper = naive_stepper(host, query=1)
    assert stepper.next_stage(0) == 7  # six sub-steps for the one query, then the stage
    scores = stepper.get(7)
    assert isinstance(scores, Stage) and scores.name == "scores"
    assert stepper.find_stage("context") == stepper.last()


def test_a_failing_variant_ends_the_steps_and_keeps_its_error() -> None:
    host = PluginHost([PLUGINS], use_env=False)
    context = build_context(load_inputs("your-journey"), TraceOptions(), uses_weights=False)
    stepper = Stepper(lambda: host.start("broken", context))
    assert isinstance(stepper.get(0), Stage)
    with pytest.raises(IndexError):
        stepper.get(1)
    assert isinstance(stepper.error, VariantRunError)
    assert "fails on purpose [at stage two]" in str(stepper.error)
    assert stepper.total == 1


def test_a_canvas_is_named_by_the_number_its_sub_steps_write(host: PluginHost) -> None:
    """Lesson 14's grad_scores loop writes D per query (its first declared Dot's result), not
    dS: its matrix is titled by that name, never 'grad_scores so far'."""
    from tracer.lessons.loader import load_lesson, shipped_dir
    from tracer.lessons.model import Loop

    lesson = load_lesson(shipped_dir() / "14_backward.yaml", host)
    loop = next(s for s in lesson.steps if isinstance(s, Loop) and s.stage == "grad_scores")
    from tracer.lessons.lesson_runner import LessonRunner

    runner = LessonRunner(lesson, host)
    try:
        stepper = Stepper(lambda: runner.start(loop.variant, loop.options, loop.query))
        number = 0
        while "grad_scores" not in stepper.canvases and stepper.get(number) is not None:
            number += 1
        canvas = stepper.canvases["grad_scores"]
        assert (canvas.stage, canvas.result) == ("grad_scores", "D_from_dP")
    finally:
        runner.close()
    naive = naive_stepper(host)
    naive.get(8)
    assert naive.canvases["scores"].result == "score"  # naive-loop's Dot("query", "key", "score")
