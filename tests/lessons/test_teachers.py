"""What teachers asked for: divide among the operations, every tensor of a shown stage, readable
inline inputs in exported notebooks, and a warning where narration would read '?'.

Numbers come from torch on the course notes' embeddings (tests/data/seeds.py), never from the
lesson runner's own output."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import torch

from tests.lessons.test_authoring import H, load, problems, scores, value_of
from tracer.lessons.model import Operation
from tracer.lessons.runner import LessonRunner, explain
from tracer.lessons.schema import lesson_schema
from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]


# divide ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("then", "cell", "oracle"),
    [
        ("[{divide: 4}, max]", "", lambda s: s.max() / 4),
        ("[max, {divide: {stage: scores, then: [min]}}]", "", lambda s: s.max() / s.min()),
        # "How many times smaller is journey's score with Your than with itself?"
        (
            "[{pick: journey}, {divide: {stage: scores, then: [{pick: journey}], cell: [1]}}]",
            ", cell: [0]",
            lambda s: s[1, 0] / s[1, 1],
        ),
        ("[{divide: {stage: scores, then: [transpose]}}]", ", cell: [2, 4]", lambda s: s[2, 4] / s[4, 2]),
    ],
)  # fmt: skip
def test_divide_matches_torch(
    then: str, cell: str, oracle: Callable[[torch.Tensor], torch.Tensor], host: PluginHost
) -> None:
    assert value_of(then, host, cell) == pytest.approx(float(oracle(scores())), rel=1e-5)


@pytest.mark.parametrize(
    ("then", "expected"),
    [
        ("[{divide: 0}]", "4:64: 'divide' by 0 has no value; divide by another number"),
        ("[{divide: 0.0}]", "4:64: 'divide' by 0 has no value; divide by another number"),
        # A tensor with a 0 in it: every score compared with 100 is 0.
        ("[{divide: {stage: scores, then: [{compare: '> 100'}]}}]",
         "4:56: 'divide' by 0 at (0, 0): the divisor has a 0 there"),
        ("[{divide: {stage: scores, then: [{compare: '> 100'}, {sum: -1}], cell: [2]}}]",
         "4:56: 'divide' by 0: the divisor has a 0 there"),
        ("[{divide: {stage: inputs}}]",
         "4:56: 'divide' needs two tensors of the same shape, not 6×6 and 6×3"),
    ],
)  # fmt: skip
def test_division_by_zero_is_refused_at_the_operation(
    then: str, expected: str, host: PluginHost
) -> None:
    text = H + f"steps:\n  - show: {{variant: naive-loop, stage: scores, then: {then}}}\n"
    assert problems(text, host) == [expected]


def test_lesson_check_names_the_file_line_and_column(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "ratio.yaml"
    path.write_text(
        H + "steps:\n  - quiz:\n      question: How many times larger?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [0, 0],\n"
        "               then: [{divide: 0}]}\n",
        encoding="utf-8",
    )
    status, out, err = attn("lesson", "check", str(path))
    assert status == 1
    assert f"{path}:7:32: 'divide' by 0 has no value; divide by another number" in out + err


def test_divide_reads_in_words_and_is_in_the_schema() -> None:
    assert explain(Operation("divide", 4.0)) == "divided by 4"
    schema = lesson_schema()
    lesson = {
        "title": "T",
        "summary": "S",
        "steps": [{"show": {"variant": "naive-loop", "stage": "scores", "then": []}}],
    }

    def valid(operation: object) -> bool:
        lesson["steps"][0]["show"]["then"] = [operation]  # type: ignore[index]
        try:
            jsonschema.validate(lesson, schema)
        except jsonschema.ValidationError:
            return False
        return True

    assert valid({"divide": 4})
    assert valid({"divide": {"stage": "scores"}})
    assert not valid({"divide": 0})


def test_the_teachers_guide_divide_example_is_right(host: PluginHost) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "lessons.md").read_text("utf-8")
    section = guide.split('"How many times larger" is a `divide`', 1)[1]
    (said,) = re.findall(r"computes \(([\d.]+)\)", section.split("```", 1)[0])
    (quiz,) = re.findall(r"```yaml\n(.*?)```", section, re.S)[:1]
    lesson = load(H + "steps:\n" + quiz, host)
    answer = LessonRunner(lesson, host).answer(lesson.quizzes[0])
    s = scores()
    assert answer == pytest.approx(float(s[1, 1] / s[1, 0]), rel=1e-5)  # journey, Your
    assert float(said) == round(float(s[1, 1] / s[1, 0]), 2)
