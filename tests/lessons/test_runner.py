"""Running lessons: operations against torch, judging answers, and run-time problems."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from tracer.lessons.check import check_lesson
from tracer.lessons.lesson_runner import LessonRunner, StepError, apply
from tracer.lessons.loader import LessonError, load_lesson, parse_lesson, resolve_lesson
from tracer.lessons.model import Operation, Quiz, Show
from tracer.plugin_host import PluginHost

DOCS = Path(__file__).parents[2] / "docs" / "lessons.md"
SCORES = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0], [2.0, 2.0, 0.0]])


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        (Operation("softmax", -1), torch.softmax(SCORES, dim=-1)),
        (Operation("softmax", 0), torch.softmax(SCORES, dim=0)),
        (Operation("normalize", 1), SCORES / SCORES.sum(dim=1, keepdim=True)),
        (Operation("sum", 0), SCORES.sum(dim=0)),
        (Operation("scale", 0.5), SCORES * 0.5),
        (Operation("pick", 1), SCORES[1]),
        (Operation("diagonal", True), torch.diagonal(SCORES)),
        (Operation("transpose", True), SCORES.T),
        (Operation("exp", True), torch.exp(SCORES)),
    ],
)
def test_operations_match_torch(operation: Operation, expected: torch.Tensor) -> None:
    torch.testing.assert_close(apply(operation, SCORES), expected)


def test_softmax_of_a_single_value_is_one() -> None:
    # Seed 002: softmax over one score, whatever it is, gives exactly 1.
    for value in (-3.0, 0.0973, 50.0):
        assert apply(Operation("softmax", 0), torch.tensor(value)).item() == 1.0


@pytest.mark.parametrize(
    ("operation", "tensor", "message"),
    [
        (
            Operation("diagonal", True),
            torch.zeros(2, 3),
            "'diagonal' needs a square table, not a tensor of shape 2×3",
        ),
        (
            Operation("transpose", True),
            torch.zeros(4),
            "'transpose' needs a table, not a tensor of shape 4",
        ),
        (
            Operation("pick", 5),
            torch.zeros(3),
            "'pick: 5' is out of range: the first dimension has 3 entries, so valid indices "
            "are 0 to 2 (indices start at 0)",
        ),
        (
            Operation("pick", -1),  # never Python's last row: out of range, with the range
            torch.zeros(3, 2),
            "'pick: -1' is out of range: the first dimension has 3 entries, so valid indices "
            "are 0 to 2 (indices start at 0)",
        ),
        (
            Operation("pick", 0),
            torch.tensor(1.0),
            "'pick: 0' has nothing to pick from: this is a single value",
        ),
        (
            Operation("sum", 1),
            torch.zeros(3),
            "'sum' over dimension 1: a tensor of shape 3 has dimensions 0 (or -1 for the last)",
        ),
    ],
)
def test_operations_that_do_not_fit(
    operation: Operation, tensor: torch.Tensor, message: str
) -> None:
    with pytest.raises(StepError) as error:
        apply(operation, tensor)
    assert error.value.message == message


LESSON = """\
title: T
summary: S
steps:
  - quiz:
      question: n?
      answer: 2.5
      tolerance: 0.1
  - quiz:
      question: c?
      choices: [red, green, blue]
      answer: green
"""


@pytest.fixture
def quizzes(host: PluginHost) -> tuple[LessonRunner, Quiz, Quiz]:
    lesson = parse_lesson(LESSON, "quiz.yaml", host)
    number, choice = lesson.quizzes
    return LessonRunner(lesson, host), number, choice


@pytest.mark.parametrize(
    ("response", "right"),
    [("2.5", True), ("2.6", True), ("2.4", True), (" 2.45 ", True), ("2.61", False), ("2", False),
     ("two", False), ("nan", False), ("inf", False), ("", False)],
)  # fmt: skip
def test_number_answers_within_tolerance(
    quizzes: tuple[LessonRunner, Quiz, Quiz], response: str, right: bool
) -> None:
    runner, number, _ = quizzes
    assert runner.is_right(number, response) is right


@pytest.mark.parametrize(
    ("response", "right"),
    [("green", True), ("b", True), ("B", True), ("2", True), ("red", False), ("a", False),
     ("3", False), ("0", False), ("purple", False)],
)  # fmt: skip
def test_choice_answers_by_text_letter_or_number(
    quizzes: tuple[LessonRunner, Quiz, Quiz], response: str, right: bool
) -> None:
    runner, _, choice = quizzes
    assert runner.is_right(choice, response) is right


def test_a_variant_that_fails_becomes_a_problem_at_the_step(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "boom.py").write_text(
        "from tracer import Variant, hookimpl, stage\n"
        "\n"
        "def run(ctx):\n"
        "    yield stage('inputs', 'Inputs', inputs=ctx.inputs)\n"
        "    raise ZeroDivisionError('no')\n"
        "\n"
        "@hookimpl\n"
        "def register_variants(register):\n"
        "    register(Variant(name='boom', title='Boom', run=run, stages=('inputs', 'scores'),\n"
        "                     uses_weights=False))\n",
        encoding="utf-8",
    )
    host = PluginHost([plugins], use_env=False, entry_points=False)
    lesson_path = tmp_path / "boom.yaml"
    lesson_path.write_text(
        "title: T\nsummary: S\nsteps:\n  - show: {variant: boom, stage: inputs}\n"
        "  - show: {variant: boom, stage: scores}\n",
        encoding="utf-8",
    )
    lesson = load_lesson(lesson_path, host)
    problems = [str(p) for p in check_lesson(lesson, host)]
    assert problems == [
        f"{lesson_path}:5:11: variant 'boom' failed: ZeroDivisionError: no ({plugins / 'boom.py'}:5)"
    ]


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def test_the_full_example_in_the_docs_checks_clean(host: PluginHost) -> None:
    example = _yaml_blocks()[0]
    assert example.startswith("# yaml-language-server: $schema=")
    lesson = parse_lesson(example, "docs-example.yaml", host)
    assert {step.kind for step in lesson.steps} == {
        "narration", "show", "loop", "compare", "quiz", "checkpoint",
    }  # fmt: skip
    assert check_lesson(lesson, host) == []


def test_the_lesson_level_snippets_in_the_docs_check_clean(host: PluginHost) -> None:
    """The 'defaults' and 'values' examples, each completed into a lesson."""
    snippets = [b for b in _yaml_blocks() if b.startswith(("defaults:", "values:"))]
    assert len(snippets) >= 3
    for block in snippets:
        text = f"title: T\nsummary: S\n{block}"
        if "steps:" not in block:
            text += "steps:\n  - narration: n\n"
        lesson = parse_lesson(text, "snippet.yaml", host)
        assert check_lesson(lesson, host) == [], block


def test_the_step_snippets_in_the_docs_check_clean(host: PluginHost) -> None:
    snippets = [block for block in _yaml_blocks() if block.lstrip().startswith(("- ", "#"))][1:]
    steps = "".join(
        "\n".join("  " + line for line in block.splitlines() if not line.startswith("# yaml-"))
        + "\n"
        for block in snippets
    )
    lesson = parse_lesson(f"title: T\nsummary: S\nsteps:\n{steps}", "snippets.yaml", host)
    assert len(lesson.steps) >= 4
    assert check_lesson(lesson, host) == []


def test_load_lesson_raises_lesson_error_with_every_problem(host: PluginHost) -> None:
    with pytest.raises(LessonError) as error:
        parse_lesson("title: [x]\nsummary: {a: 1}\nsteps: 3\n", "three.yaml", host)
    assert [str(p) for p in error.value.problems] == [
        "three.yaml:1:8: title must be text, not a list",
        "three.yaml:2:10: summary must be text, not a mapping",
        "three.yaml:3:8: steps must be a list, not a number (3)",
    ]
    assert error.value.exit_status == 1


def test_show_without_a_tensor_name_shows_every_tensor_of_the_stage(host: PluginHost) -> None:
    lesson = parse_lesson(
        "title: T\nsummary: S\nsteps:\n"
        "  - show: {variant: trainable, stage: projections}\n"
        "  - show: {variant: trainable, stage: projections, tensor: W_key}\n",
        "all.yaml",
        host,
    )
    runner = LessonRunner(lesson, host)
    every, one = (step.ref for step in lesson.steps if isinstance(step, Show))
    assert [r.name for r in runner.tensors(every)] == [
        "projections.W_query",
        "projections.W_key",
        "projections.W_value",
    ]
    assert [r.name for r in runner.tensors(one)] == ["projections.W_key"]


def test_operations_on_a_mask_count_its_ones(host: PluginHost) -> None:
    lesson = parse_lesson(
        "title: T\nsummary: S\nsteps:\n"
        "  - show: {variant: masked, stage: mask, then: [{softmax: -1}]}\n"
        "  - quiz:\n"
        "      question: hidden from Your?\n"
        "      answer: {variant: masked, stage: mask, then: [{sum: -1}], cell: [Your]}\n",
        "mask.yaml",
        host,
    )
    assert check_lesson(lesson, host) == []
    # Your is the first token: every one of the other five is in its future.
    assert LessonRunner(lesson, host).answer(lesson.quizzes[0]) == 5.0


def test_two_masks_compare_as_zeros_and_ones(host: PluginHost) -> None:
    # torch refuses bool - bool; the causal mask against a sliding window's mask must still show.
    text = (
        "title: T\nsummary: S\nsteps:\n  - compare:\n      left: {variant: masked, stage: mask}\n"
        "      right: {variant: sliding-window, stage: mask, tensor: band}\n"
    )
    lesson = parse_lesson(text, "masks.yaml", host)
    left, right, difference = LessonRunner(lesson, host).compare(lesson.steps[0])  # type: ignore[arg-type]
    assert left.tensor.dtype == right.tensor.dtype == torch.bool
    assert difference is not None
    expected = right.tensor.to(torch.int64) - left.tensor.to(torch.int64)
    assert torch.equal(difference, expected)
    assert set(difference.unique().tolist()) == {0, 1}  # the window hides more, never less


def test_a_lesson_wide_fact_is_computed_once_per_runner(host: PluginHost) -> None:
    """``once`` keeps what a runner found about the whole lesson (every quiz's answer, ...):
    asked again, the same object; another runner of the same lesson finds it anew."""
    from tracer.lessons.hiding import lesson_secrets

    lesson = load_lesson(resolve_lesson("dot_products"), host)
    runner, other = LessonRunner(lesson, host), LessonRunner(lesson, host)
    calls: list[int] = []

    def count() -> int:
        calls.append(1)
        return len(calls)

    assert runner.once("count", count) == 1
    assert runner.once("count", count) == 1 and len(calls) == 1
    assert other.once("count", count) == 2
    found = lesson_secrets(lesson, runner)
    assert found and lesson_secrets(lesson, runner) is found
    assert lesson_secrets(lesson, other) is not found and lesson_secrets(lesson, other) == found
